"""Coverage verdict and diagnosis of an audit, from scored-source rows."""

from __future__ import annotations

import pyarrow as pa

from jobs.coverage import CoverageConfig, measure_coverage


def scores(rows: list[tuple[str, str, str | None, str | None]]) -> pa.Table:
    """``(system, page_status, page_error, judge_status)`` rows as scored sources."""
    names = ["model_name", "page_status", "page_error", "judge_status"]
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})


def test_all_refused_is_incomplete_and_says_how_to_allow_the_host():
    refused = ("refused 127.0.0.1: 127.0.0.1 is not a public address", None)
    table = scores([("a", "blocked_address", *refused)] * 3 + [("b", "blocked_address", *refused)] * 3)
    coverage = measure_coverage(table, CoverageConfig())
    assert not coverage["complete"] and coverage["below_threshold"] == ["a", "b"]
    text = coverage["diagnosis"]
    assert "0 of 6" in text and "blocked_address 6" in text and "refused 127.0.0.1" in text
    assert "--allowlist 127.0.0.1" in text and "--allow-private-networks" in text
    assert "count 0 in the weighted scores" in text


def test_a_dead_link_lowers_coverage_but_passes_the_default_threshold():
    table = scores([("a", "ok", None, "scored")] * 9 + [("a", "http_error", "HTTP 404", None)])
    coverage = measure_coverage(table, CoverageConfig())
    assert coverage["complete"] and coverage["systems"]["a"] == {
        "selected": 10,
        "fetched_ok": 9,
        "judged": 9,
        "share": 0.9,
    }
    assert not measure_coverage(table, CoverageConfig(min_share=0.95))["complete"]


def test_one_judge_error_fails_whatever_the_share():
    table = scores([("a", "ok", None, "scored")] * 99 + [("a", "ok", None, "error")])
    coverage = measure_coverage(table, CoverageConfig(min_share=0.5))
    assert not coverage["complete"] and coverage["judge_errors"] == 1
    assert "judgments failed with error" in coverage["diagnosis"]
    assert "rerun the same --run" in coverage["diagnosis"]


def test_the_complete_policy_is_named_in_the_diagnosis():
    table = scores([("a", "timeout", "timed out", None)])
    assert "left out of the aggregates" in measure_coverage(table, CoverageConfig(), "complete")["diagnosis"]
