"""The reduce: official semantics against an independent reference, both policies, Parquet and S3 paths."""

import io
import json
import os
import random
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler.errors import InputError
from crawler.storage import RunStore
from jobs.analysis import system_intervals
from jobs.inputs import load_enriched_scores, load_query_types
from jobs.ray_runtime import RayConfig, ensure_ray
from jobs.reduce import ReduceConfig, RunSpec, reduce_specs

KEYS = [
    "semantic_relevance",
    "factual_accuracy",
    "freshness",
    "objectivity_tone",
    "layout_ad_density",
    "accountability",
    "transparency",
    "authority",
]
W = {"semantic_relevance": 3, "factual_accuracy": 3, "objectivity_tone": 3}
TYPES = ["VACOS", "DebateQA", "HotpotQA", "Pinocchios", "QuoraQuestions"]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    import ray

    ensure_ray(RayConfig(num_cpus=2))
    yield
    ray.shutdown()


def messy_value(rng: random.Random):
    r = rng.random()
    if r < 0.70:
        return rng.randint(1, 5)
    if r < 0.75:
        return rng.choice([1.5, 2.25, 4.75])
    if r < 0.82:
        return rng.choice(["3", " 4 ", "2.5"])
    if r < 0.88:
        return rng.choice(["n/a", "", "five", "NaN?"])
    if r < 0.94:
        return None
    return rng.choice([True, [4], {"score": 4}])


def make_enriched(rng: random.Random, n_queries: int) -> list:
    records = []
    for q in range(1, n_queries + 1):
        sources = []
        for j in range(rng.randint(0, 7)):
            vector = {k: messy_value(rng) for k in KEYS if rng.random() > 0.05}
            sources.append(
                {
                    "agg_source_id": j,
                    "url_canonical": f"https://s{j}.example/{q}",
                    "text_content_length": rng.randint(0, 5000),
                    "content_vector": vector if rng.random() > 0.04 else "broken",
                }
            )
        records.append(
            {
                "query_id": q if rng.random() < 0.5 else str(q),
                "query_text": f"query {q}",
                "aggregated_sources": sources,
            }
        )
    return records


def reference_value(v):
    """Independent reading of the official rule: numbers and numeric strings, else missing."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return None
    return None


def reference(runs: dict, qtypes: dict, policy: str):
    """Per system and per system x query type: weighted and unweighted means, counts."""
    sources = []
    for system, records in runs.items():
        for rec in records:
            for s in rec["aggregated_sources"]:
                if not isinstance(s.get("content_vector"), dict):
                    continue
                vals = [reference_value(s["content_vector"].get(k)) for k in KEYS]
                present = [v for v in vals if v is not None]
                sources.append(
                    {
                        "system": system,
                        "qid": str(int(rec["query_id"])),
                        "qtype": qtypes[str(int(rec["query_id"]))],
                        "weighted": sum((v or 0.0) * W.get(k, 2) for k, v in zip(KEYS, vals, strict=True))
                        * 100
                        / 95,
                        "unweighted": sum(present) / len(present) if present else None,
                        "complete": len(present) == 8,
                    }
                )
    if policy == "complete":
        sources = [s for s in sources if s["complete"]]

    def agg(group):
        un = [s["unweighted"] for s in group if s["unweighted"] is not None]
        return {
            "weighted": sum(s["weighted"] for s in group) / len(group),
            "unweighted": sum(un) / len(un) if un else None,
            "n": len(group),
            "queries": len({s["qid"] for s in group}),
            "complete": sum(s["complete"] for s in group),
        }

    overall, by_type = {}, {}
    for s in sources:
        overall.setdefault(s["system"], []).append(s)
        by_type.setdefault((s["system"], s["qtype"]), []).append(s)
    return {k: agg(v) for k, v in overall.items()}, {k: agg(v) for k, v in by_type.items()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(20261202)
    base = tmp_path_factory.mktemp("reduce")
    n_queries = 25
    qcsv = base / "queries.csv"
    qtypes = {str(q): TYPES[q % 5] for q in range(1, n_queries + 1)}
    qcsv.write_text(
        "query_id,query,query_type\n" + "".join(f"{q},query {q},{t}\n" for q, t in qtypes.items())
    )
    runs = {f"system-{i}": make_enriched(rng, n_queries) for i in range(4)}
    paths = {}
    for name, records in runs.items():
        paths[name] = base / f"{name}.enriched.json"
        paths[name].write_text(json.dumps(records))
    return {"base": base, "runs": runs, "paths": paths, "qcsv": str(qcsv), "qtypes": qtypes}


def check_against_reference(out: RunStore, corpus, policy: str) -> None:
    ref_overall, ref_by_type = reference(corpus["runs"], corpus["qtypes"], policy)
    overall = {r["model_name"]: r for r in out.read_json("leaderboard_data.json")["overall"]}
    assert set(overall) == set(ref_overall)
    for system, ref in ref_overall.items():
        row = overall[system]
        assert row["weighted_total_content_score"] == pytest.approx(ref["weighted"], abs=1e-9)
        assert row["unweighted_mean_score"] == pytest.approx(ref["unweighted"], abs=1e-9)
        assert (row["num_sources"], row["num_queries"], row["num_complete_scores"]) == (
            ref["n"],
            ref["queries"],
            ref["complete"],
        )
    by_type = pd.read_csv(io.BytesIO(out.read_bytes("leaderboard_by_query_type.csv")))
    assert len(by_type) == len(ref_by_type)
    for row in by_type.itertuples():
        ref = ref_by_type[(row.model_name, row.query_type)]
        assert row.weighted_total_content_score == pytest.approx(ref["weighted"], abs=1e-9)
        assert row.unweighted_mean_score == pytest.approx(ref["unweighted"], abs=1e-9)
        assert row.num_sources == ref["n"]
    weighted = [r["weighted_total_content_score"] for r in out.read_json("leaderboard_data.json")["overall"]]
    assert weighted == sorted(weighted, reverse=True)


@pytest.mark.parametrize("executor", ["ray", "local"])
@pytest.mark.parametrize("policy", ["official", "complete"])
def test_enriched_json_matches_reference(corpus, tmp_path, policy, executor):
    specs = [RunSpec(name, str(path)) for name, path in corpus["paths"].items()]
    config = ReduceConfig(policy=policy, executor=executor)
    summary = reduce_specs(specs, str(tmp_path / "lb"), config, corpus["qcsv"])
    assert summary["executor"] == executor
    out = RunStore(str(tmp_path / "lb"))
    check_against_reference(out, corpus, policy)
    assert set(summary["files"]) >= {
        "source_metrics.csv",
        "query_metrics.csv",
        "leaderboard_overall.csv",
        "leaderboard_by_query_type.csv",
        "main_table.csv",
        "leaderboard_data.json",
    }
    # Every source with a content_vector is kept in source_metrics, whatever the policy.
    expected_rows = sum(
        isinstance(s.get("content_vector"), dict)
        for recs in corpus["runs"].values()
        for r in recs
        for s in r["aggregated_sources"]
    )
    assert pq.read_table(out.path("source_metrics.parquet")).num_rows == expected_rows == summary["sources"]
    main = pd.read_csv(out.path("main_table.csv"))
    assert list(main.columns) == [
        "model_name",
        "query_type",
        "unweighted_mean_score",
        "weighted_total_content_score",
        "num_sources",
        "num_queries",
    ]


def scores_parquet(corpus, path) -> str:
    qtypes = load_query_types(corpus["qcsv"])
    tables = [load_enriched_scores(str(p), name, qtypes) for name, p in corpus["paths"].items()]
    pq.write_table(pa.concat_tables(tables), path)
    return str(path)


@pytest.mark.parametrize("executor", ["ray", "local"])
def test_parquet_scores_match_json(corpus, tmp_path, executor):
    spec = RunSpec(None, scores_parquet(corpus, tmp_path / "scores.parquet"))
    reduce_specs([spec], str(tmp_path / "lb"), ReduceConfig(executor=executor))
    check_against_reference(RunStore(str(tmp_path / "lb")), corpus, "official")


def sorted_frame(path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype={"query_id": str})
    keys = [c for c in ("model_name", "query_type", "query_id") if c in frame.columns]
    return frame.sort_values(keys).reset_index(drop=True)


@pytest.mark.parametrize("policy", ["official", "complete"])
def test_executors_agree_over_many_batches(corpus, tmp_path, policy):
    """Small batches: partial sums merged across batches; source rows keep the input order.

    Group means may differ in the last bits from a one-batch reduce (float sums in another order).
    """
    spec = RunSpec(None, scores_parquet(corpus, tmp_path / "scores.parquet"))
    whole = ReduceConfig(policy=policy, executor="local", batch_size=1_000_000, bootstrap_replicates=0)
    reduce_specs([spec], str(tmp_path / "whole"), whole)
    for executor in ("ray", "local"):
        config = whole.model_copy(update={"executor": executor, "batch_size": 7, "local_threads": 3})
        summary = reduce_specs([spec], str(tmp_path / executor), config)
        assert summary["sources"] == pq.read_metadata(spec.path).num_rows
        sources = (tmp_path / executor / "source_metrics.csv").read_bytes()
        assert sources == (tmp_path / "whole" / "source_metrics.csv").read_bytes()
        for name in ("query_metrics.csv", "leaderboard_by_query_type.csv", "leaderboard_overall.csv"):
            pd.testing.assert_frame_equal(
                sorted_frame(tmp_path / executor / name), sorted_frame(tmp_path / "whole" / name), rtol=1e-12
            )


def test_intervals_match_per_source_bootstrap(corpus, tmp_path):
    specs = [RunSpec(name, str(path)) for name, path in corpus["paths"].items()]
    reduce_specs(specs, str(tmp_path / "lb"), ReduceConfig(bootstrap_replicates=400, bootstrap_seed=7))
    out = RunStore(str(tmp_path / "lb"))
    sources = pq.read_table(out.path("source_metrics.parquet")).to_pandas()
    expected = system_intervals(sources, n_boot=400, seed=7).set_index("model_name")
    overall = pd.read_csv(out.path("leaderboard_overall.csv")).set_index("model_name")
    for column in ("weighted_ci_low", "weighted_ci_high", "unweighted_ci_low", "unweighted_ci_high"):
        np.testing.assert_allclose(overall.loc[expected.index, column], expected[column], atol=1e-9)
    assert (overall["weighted_ci_low"] <= overall["weighted_total_content_score"]).all()
    assert (overall["weighted_total_content_score"] <= overall["weighted_ci_high"]).all()


@pytest.mark.parametrize("executor", ["ray", "local"])
def test_s3_roundtrip(corpus, s3_bucket, executor):
    scores = RunStore(f"s3://{s3_bucket}/run")
    local = corpus["base"] / "s3-scores.parquet"
    scores.write_bytes("scores/part-0.parquet", open(scores_parquet(corpus, local), "rb").read())
    config = ReduceConfig(executor=executor)
    reduce_specs([RunSpec(None, scores.uri_of("scores"))], scores.uri_of("leaderboard"), config)
    check_against_reference(RunStore(scores.uri_of("leaderboard")), corpus, "official")


def test_bad_inputs(corpus, tmp_path):
    with pytest.raises(InputError, match="needs a system name"):
        reduce_specs([RunSpec(None, str(corpus["paths"]["system-0"]))], str(tmp_path / "x"))
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"model_name": ["a"], "query_id": ["1"]}), bad)
    with pytest.raises(InputError, match="missing score column") as info:
        reduce_specs([RunSpec(None, str(bad))], str(tmp_path / "x"))
    assert info.value.field == "query_type"


@pytest.mark.slow
def test_cli_module_entry_point(corpus, tmp_path):
    args = [
        sys.executable,
        "-m",
        "jobs.reduce",
        "--query-metadata",
        corpus["qcsv"],
        "--out",
        str(tmp_path / "lb"),
    ]
    for name, path in corpus["paths"].items():
        args += ["--scores", f"{name}={path}"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "system-" in done.stdout and "weighted" in done.stdout
    assert "local executor" in done.stdout  # auto: no cluster addressed, so no Ray start-up
    check_against_reference(RunStore(str(tmp_path / "lb")), corpus, "official")
