"""The report's completeness parts: constant dimensions are named, not ranked."""

from __future__ import annotations

import pandas as pd

from jobs.analysis.completeness import constant_dimensions, constant_note


def test_a_dimension_with_one_score_everywhere_is_flagged():
    sources = pd.DataFrame(
        {"freshness": [2.0, 2.0, None, 2.0], "authority": [3.0, 5.0, 4.0, None], "accountability": [4.0] * 4}
    )
    assert constant_dimensions(sources) == ["freshness", "accountability"]
    note = constant_note(["freshness"])
    assert note and "Freshness" in note and "not a finding" in note
    assert constant_note([]) is None
