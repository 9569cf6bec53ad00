"""Per-system manipulation counts joined from page records to the leaderboard's sources."""

from __future__ import annotations

import pandas as pd

from jobs.analysis.manipulation import manipulation_by_system


def test_flagged_sources_are_counted_per_system_and_kind():
    sources = pd.DataFrame(
        {
            "model_name": ["a", "a", "b", "b"],
            "source_url": ["https://x.org/1", "https://x.org/2", "https://x.org/1", "https://y.org/3"],
            "agg_source_id": ["k1", "k2", "k1", "k3"],
        }
    )
    pages = pd.DataFrame(
        {
            "url_key": ["k1", "k2", "k3"],
            "url": ["https://x.org/1", "https://x.org/2", "https://y.org/other-spelling"],
            "manipulation": [["hidden_text", "prompt_injection"], [], ["keyword_stuffing"]],
        }
    )
    table = manipulation_by_system(sources, pages).set_index("model_name")
    assert table.loc["a", "sources"] == 2 and table.loc["a", "flagged"] == 1
    assert table.loc["a", "flagged_pct"] == 50.0 and table.loc["a", "prompt_injection"] == 1
    assert table.loc["b", "flagged"] == 2 and table.loc["b", "keyword_stuffing"] == 1  # matched by url_key
    assert manipulation_by_system(sources, pages.drop(columns="manipulation")) is None
