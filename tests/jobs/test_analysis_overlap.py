"""SERP overlap on small hand-made citation tables whose shares are known."""

from __future__ import annotations

import pandas as pd
import pytest

from jobs.analysis.overlap import score_by_overlap, score_vs_overlap, serp_overlap, source_overlap_flags


def _cited(rows: list[tuple[str, str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["system", "query_id", "url", "rank"])


CITED = _cited(
    [
        ("g", "1", "https://a.com/x", 1),
        ("g", "1", "https://news.b.co.uk/y", 2),
        ("g", "1", "https://c.org/z", 3),
        ("g", "2", "https://d.com/", 1),
        # s1: one exact hit (spelled differently), one domain-only hit (other page and host), one miss.
        ("s1", "1", "HTTPS://A.com:443/x?utm_medium=ai#frag", 1),
        ("s1", "1", "https://www.b.co.uk/other", 2),
        ("s1", "1", "https://e.net/", 3),
        ("s1", "1", "https://e.net/#again", 4),  # the same page as rank 3: counted once
        ("s1", "2", "https://d.com/", 1),
        ("s1", "3", "https://f.com/", 1),  # query 3 has no SERP results: not counted
        ("s2", "1", "https://c.org/z", 1),
    ]
)


def test_url_and_domain_shares() -> None:
    table = serp_overlap(CITED, ["g"]).set_index("system")
    assert table.loc["s1", "num_queries"] == 2 and table.loc["s1", "num_sources"] == 4
    assert table.loc["s1", "url_overlap_pct"] == pytest.approx(100 * 2 / 4)
    assert table.loc["s1", "domain_overlap_pct"] == pytest.approx(100 * 3 / 4)
    assert table.loc["s2", "url_overlap_pct"] == 100.0
    assert "g" not in table.index


def test_top_k_limits_the_serp() -> None:
    table = serp_overlap(CITED, ["g"], serp_top_k=2).set_index("system")
    assert table.loc["s2", "url_overlap_pct"] == 0.0  # c.org was rank 3
    assert table.loc["s1", "url_overlap_pct"] == pytest.approx(50.0)


def test_unknown_serp_system_is_an_error() -> None:
    with pytest.raises(ValueError, match="no rows for SERP system 'bing'"):
        source_overlap_flags(CITED, "bing")


def test_score_vs_overlap_and_split() -> None:
    overlap = pd.DataFrame(
        {
            "system": ["a", "b", "c", "d"],
            "serp_system": "g",
            "num_queries": 1,
            "num_sources": 1,
            "url_overlap_pct": [10.0, 20.0, 30.0, 40.0],
            "domain_overlap_pct": [40.0, 30.0, 20.0, 10.0],
        }
    )
    board = pd.DataFrame(
        {"model_name": ["a", "b", "c", "d"], "weighted_total_content_score": [90, 80, 85, 60]}
    )
    _, stats = score_vs_overlap(overlap, board)
    stats = stats.set_index("level")
    assert stats.loc["url", "spearman_rho"] == pytest.approx(-0.8)  # ranks (1,2,3,4) vs (4,2,3,1)
    assert stats.loc["domain", "spearman_rho"] == pytest.approx(0.8)

    flags = source_overlap_flags(CITED, "g")
    sources = pd.DataFrame(
        {
            "model_name": ["s1", "s1", "s1"],
            "query_id": ["1", "1", "2"],
            "source_url": ["https://a.com/x", "https://e.net/", "https://d.com/"],
            "weighted_total_content_score": [90.0, 50.0, 70.0],
        }
    )
    split = score_by_overlap(flags, sources).set_index("system")
    assert split.loc["s1", "in_serp_score"] == pytest.approx(80.0)
    assert split.loc["s1", "not_in_serp_score"] == pytest.approx(50.0)
    assert split.loc["s1", "in_serp_sources"] == 2
