"""The six official rank/overlap columns, computed from a SERP, in the reduce's outputs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from jobs.cli import main
from jobs.leaderboard.metrics import RANK_COLUMNS
from jobs.leaderboard.ranks import rank_metrics
from judge.rubric import DIMENSION_KEYS

SERP = pd.DataFrame(
    {
        "query_id": ["1", "1", "1", "2"],
        "url": [
            "https://a.example/",
            "https://b.example/x",
            "https://a.example/#again",
            "https://z.example/",
        ],
        "rank": [1, 2, 3, 1],
    }
)


def test_rank_metrics_follow_their_definitions() -> None:
    sources = pd.DataFrame(
        {
            "model_name": ["g", "g", "g", "g", "google"],
            "query_id": ["1", "1", "2", "3", "1"],
            "agg_source_id": ["s1", "s2", "s3", "s4", "s5"],
            "url": [
                "https://B.example/x?utm_source=x",  # the SERP's second distinct URL, spelled otherwise
                "https://c.example/",  # not in the SERP
                "https://z.example",  # first of a one-URL list
                "https://q.example/",  # query 3: the SERP did not answer it
                "https://a.example/",  # the SERP's own row
            ],
        }
    )
    rows = rank_metrics(sources, SERP, "google", {("g", "1", None): 3}).to_pandas().set_index("agg_source_id")
    assert list(rows.index) == ["s1", "s2", "s3"]  # no row for query 3 nor for the SERP itself
    s1, s2, s3 = rows.loc["s1"], rows.loc["s2"], rows.loc["s3"]
    assert (s1.reciprocal_se_rank, s1.relative_se_rank) == (0.5, 1.0)  # position 2 of 2
    assert s1.normalized_reciprocal_se_rank == pytest.approx((1 / 2 - 1 / 3) / (1 - 1 / 3))
    assert (s2.reciprocal_se_rank, s2.normalized_reciprocal_se_rank) == (0.0, 0.0)
    assert pd.isna(s2.relative_se_rank)
    assert (s3.reciprocal_se_rank, s3.relative_se_rank, s3.normalized_reciprocal_se_rank) == (1.0, 1.0, 1.0)
    assert s1.percentage_ge_sources_in_se_sources == s2.percentage_ge_sources_in_se_sources == 50.0
    assert s1.percentage_ge_sources_not_in_se_sources == 50.0
    assert s3.percentage_ge_sources_in_se_sources == 100.0
    assert (rows["avg_ge_freq"] == 1.0).all()


def enriched(path: Path, urls: dict[str, list[str]]) -> str:
    records = [
        {
            "query_id": int(qid),
            "query": f"question {qid}",
            "query_type": "VACOS",
            "aggregated_sources": [
                {
                    "agg_source_id": i,
                    "url_canonical": url,
                    "text_content_length": 1000,
                    "content_vector": {key: 4 for key in DIMENSION_KEYS},
                }
                for i, url in enumerate(found)
            ],
        }
        for qid, found in urls.items()
    ]
    path.write_text(json.dumps(records))
    return str(path)


def test_reduce_with_a_serp_fills_the_official_rank_columns(tmp_path: Path, capsys) -> None:
    serp = tmp_path / "serp.csv"
    serp.write_text(
        "query_id,rank,url\n1,1,https://a.example/\n1,2,https://b.example/\n2,1,https://c.example/\n"
    )
    near = enriched(
        tmp_path / "near.json",
        {"1": ["https://a.example/", "https://b.example/"], "2": ["https://c.example/"]},
    )
    far = enriched(
        tmp_path / "far.json",
        {"1": ["https://a.example/", "https://x.example/"], "2": ["https://y.example/"]},
    )
    out = tmp_path / "lb"
    args = ["reduce", "--scores", f"near={near}", "--scores", f"far={far}", "--serp", f"google={serp}"]
    assert main([*args, "--out", str(out), "--executor", "local", "--bootstrap", "0"]) == 0
    with open(out / "source_metrics.csv", newline="") as handle:
        sources = list(csv.DictReader(handle))
    filled = [c for c in RANK_COLUMNS if c != "relative_se_rank"]  # null for a source the SERP lacks
    assert all(row[column] != "" for row in sources for column in filled)
    assert all((row["relative_se_rank"] == "") == (float(row["reciprocal_se_rank"]) == 0) for row in sources)
    overall = {
        row["model_name"]: row for row in json.loads((out / "leaderboard_data.json").read_text())["overall"]
    }
    # The official aggregate: the plain mean of the source rows' values.
    assert overall["near"]["percentage_ge_sources_in_se_sources"] == pytest.approx(100.0)
    assert overall["far"]["percentage_ge_sources_in_se_sources"] == pytest.approx((50 + 50 + 0) / 3)
    assert overall["far"]["reciprocal_se_rank"] == pytest.approx((1.0 + 0.0 + 0.0) / 3)
    assert overall["near"]["relative_se_rank"] == pytest.approx((0.5 + 1.0 + 1.0) / 3)


def test_without_a_serp_the_rank_columns_stay_empty(tmp_path: Path) -> None:
    path = enriched(tmp_path / "a.json", {"1": ["https://a.example/"]})
    out = tmp_path / "lb"
    assert (
        main(
            ["reduce", "--scores", f"a={path}", "--out", str(out), "--executor", "local", "--bootstrap", "0"]
        )
        == 0
    )
    overall = json.loads((out / "leaderboard_data.json").read_text())["overall"][0]
    assert all(overall[column] is None for column in RANK_COLUMNS)
