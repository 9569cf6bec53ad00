"""The audit end to end on the offline demo (local Ray, WARC replay, signals judge): outputs, status rows,
stage skipping on rerun, partial recomputation after a config change, and bad-input handling."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pytest

from crawler.layout import LAYOUT
from crawler.storage import RunStore
from crawler.urls import canonicalize_url
from jobs import audit as audit_module
from jobs.audit import Audit
from jobs.config import load_config
from jobs.demo.build_demo import MISSING_URLS, NOT_FOUND_URL
from judge.rubric import DIMENSION_KEYS

REPO = Path(__file__).resolve().parents[2]
DEMO_CONFIG = str(REPO / "jobs" / "configs" / "demo.yaml")
QUERIES = str(REPO / "jobs" / "demo" / "queries.csv")
BUNDLES = [str(p) for p in sorted((REPO / "jobs" / "demo" / "citations").glob("*.json"))]
WARC = str(REPO / "jobs" / "demo" / "demo.warc.gz")
SERP = str(REPO / "jobs" / "demo" / "serp.csv")
STAGES = ("inputs", "crawl", "judge", "scores", "reduce", "report")

pytestmark = pytest.mark.slow


def demo_config(run: Path, *overrides: str):
    # Paths in the demo config are relative to the repository root.
    return load_config(
        DEMO_CONFIG,
        [
            f"store.run={run}",
            f"inputs.queries={QUERIES}",
            f"inputs.citations=[{', '.join(BUNDLES)}]",
            f"crawl.replay_warcs=[{WARC}]",
            f"inputs.serp={{demo-serp: {SERP}}}",
            *overrides,
        ],
    )


@pytest.fixture(scope="module")
def demo_run(local_ray, tmp_path_factory):
    run = tmp_path_factory.mktemp("audit") / "demo"
    summary = Audit(demo_config(run, "cluster.stream=false")).run()
    summary["scores"] = RunStore(str(run)).read_table("scores/source_scores.parquet")  # before later tests
    return run, summary


def test_demo_audit_writes_scores_leaderboard_and_report(demo_run):
    run, summary = demo_run
    store = RunStore(str(run))
    for name in ("leaderboard_overall.csv", "leaderboard_data.json", "source_metrics.csv", "report.html"):
        assert store.exists(f"leaderboard/{name}"), name
    selected = store.read_table("inputs/selected_sources.parquet")
    scores = store.read_table("scores/source_scores.parquet").to_pylist()
    assert len(scores) == selected.num_rows == summary["sources"]
    by_url = {}
    for row in scores:
        by_url.setdefault(row["cited_url"], []).append(row)
    # Dead links and the 404 stay as rows with their failure status and no score at all.
    for url in [*MISSING_URLS.values(), NOT_FOUND_URL]:
        for row in by_url[url]:
            assert row["page_status"] != "ok" and row["judge_status"] is None, row
            assert all(row[key] is None for key in DIMENSION_KEYS)
    ok_rows = [r for r in scores if r["page_status"] == "ok"]
    assert ok_rows and all(r["judge_status"] == "scored" for r in ok_rows)
    assert all(1 <= r[key] <= 5 for r in ok_rows for key in DIMENSION_KEYS)
    overall = {
        row["model_name"]: row for row in store.read_json("leaderboard/leaderboard_data.json")["overall"]
    }
    assert set(overall) == {"demo-careful", "demo-clickbait", "demo-mixed", "demo-serp"}
    careful, clickbait = (
        overall[s]["weighted_total_content_score"] for s in ("demo-careful", "demo-clickbait")
    )
    assert careful > clickbait  # the corpus was designed with visibly different source quality
    manifest = store.read_json("manifest.json")
    assert set(manifest["stages"]) == set(STAGES)
    assert manifest["inputs"] and manifest["config"]["judge"]["engine"] == "signals"
    assert manifest["robots"]["obey_robots"] is True
    assert summary["page_status"]["ok"] > 0 and summary["pages_per_s"] > 0


def test_demo_report_has_intervals_heatmap_and_serp_overlap(demo_run):
    store = RunStore(str(demo_run[0]))
    overall = pd.read_csv(io.BytesIO(store.read_bytes("leaderboard/leaderboard_overall.csv")))
    for column in ("weighted_ci_low", "weighted_ci_high", "unweighted_ci_low", "unweighted_ci_high"):
        assert overall[column].notna().all(), column
    html = store.read_bytes("leaderboard/report.html").decode()
    for section in ("Leaderboard", "Correlations between dimensions", "Overlap with search-engine results"):
        assert f"<h2>{section}" in html, section
    overlap = pd.read_csv(io.BytesIO(store.read_bytes("leaderboard/analysis/serp_overlap.csv")))
    assert set(overlap["system"]) == {"demo-careful", "demo-clickbait", "demo-mixed"}
    trend = pd.read_csv(io.BytesIO(store.read_bytes("leaderboard/analysis/score_vs_overlap.csv")))
    # The demo SERP ranks what the clickbait system cites: the paper's inverse score/overlap relation.
    assert (trend["spearman_rho"].dropna() < 0).all()
    # The official rank columns are filled from the SERP: the share of each system's scored sources
    # (the top-k selection, not every citation as in the report's overlap) that the SERP lists.
    by_system = overall.set_index("model_name")
    citations = store.read_table("inputs/citations.parquet").to_pandas()
    serp = citations[citations["system"] == "demo-serp"]
    listed = {(q, canonicalize_url(u)) for q, u in zip(serp["query_id"], serp["url"], strict=True)}
    sources = store.read_table("leaderboard/source_metrics.parquet").to_pandas()
    for system in overlap["system"]:
        mine = sources[(sources["model_name"] == system) & sources["query_id"].isin(serp["query_id"])]
        hits = [
            (q, canonicalize_url(u)) in listed
            for q, u in zip(mine["query_id"], mine["source_url"], strict=True)
        ]
        expected = 100.0 * sum(hits) / len(hits)
        assert by_system.loc[system, "percentage_ge_sources_in_se_sources"] == pytest.approx(expected)
        assert by_system.loc[system, "reciprocal_se_rank"] >= 0
    assert by_system.loc["demo-serp", ["avg_ge_freq", "percentage_ge_sources_in_se_sources"]].isna().all()


def test_export_writes_the_official_rank_file(demo_run, tmp_path):
    from jobs.export import export_enriched_json

    export_enriched_json(str(demo_run[0]), str(tmp_path))
    overall = RunStore(str(demo_run[0])).read_json("leaderboard/leaderboard_data.json")["overall"]
    expected = {row["model_name"]: row["percentage_ge_sources_in_se_sources"] for row in overall}
    for system in ("demo-careful", "demo-clickbait", "demo-mixed"):
        ranks = json.loads((tmp_path / f"{system}.geo_scores.json").read_text())["results"]
        sources = [s for entry in ranks for s in entry["ge_sources"]]
        assert sources and all("reciprocal_se_rank" in s and "agg_source_id" in s for s in sources)
        # compute_metrics.py: in = 100 - not_in per query, repeated on each of the query's sources.
        shares = [100 - e["percentage_ge_sources_not_in_se_sources"] for e in ranks for _ in e["ge_sources"]]
        assert sum(shares) / len(shares) == pytest.approx(expected[system])
    assert not (tmp_path / "demo-serp.geo_scores.json").exists()


def test_rerun_skips_every_committed_stage(demo_run):
    run, _ = demo_run
    store = RunStore(str(run))
    before = store.read_bytes("scores/source_scores.parquet")
    logged: list[str] = []
    Audit(demo_config(run, "cluster.stream=false"), log=logged.append).run()
    assert all(f"[{stage}] already committed, skipped" in logged for stage in STAGES), logged
    assert store.read_bytes("scores/source_scores.parquet") == before
    assert [a["status"] for a in store.read_json("manifest.json")["attempts"]] == ["done", "done"]


def test_a_judge_change_reruns_the_judge_but_not_the_crawl(demo_run):
    run, _ = demo_run
    logged: list[str] = []
    Audit(
        demo_config(run, "cluster.stream=false", "judge.signals.relevance=overlap"), log=logged.append
    ).run()
    assert "[inputs] already committed, skipped" in logged and "[crawl] already committed, skipped" in logged
    for stage in ("judge", "scores", "reduce", "report"):
        assert f"[{stage}] running" in logged, logged
    vectors_engine = RunStore(str(run)).read_json("manifest.json")["config"]["judge"]["signals"]["relevance"]
    assert vectors_engine == "overlap"


def test_a_changed_serp_file_reruns_the_inputs(demo_run, tmp_path):
    run, _ = demo_run
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    serp = tmp_path / "serp.csv"
    serp.write_text("\n".join(Path(SERP).read_text().splitlines()[:-1]) + "\n")  # its last result gone
    logged: list[str] = []
    config = demo_config(copy, "cluster.stream=false", f"inputs.serp={{demo-serp: {serp}}}", "report=null")
    Audit(config, log=logged.append).run()
    assert "[inputs] running" in logged, logged
    citations = RunStore(str(copy)).read_table("inputs/citations.parquet")
    serp_rows = pc.sum(pc.equal(citations["system"], "demo-serp")).as_py()
    assert serp_rows == len(Path(SERP).read_text().splitlines()) - 2  # header and the dropped row


def test_cli_prints_the_leaderboard_and_reports_bad_input(demo_run, tmp_path, capsys):
    run, _ = demo_run
    parser = argparse.ArgumentParser()
    audit_module.add_arguments(parser)
    common = ["--config", DEMO_CONFIG, "--queries", QUERIES, "--set", f"crawl.replay_warcs=[{WARC}]"]
    args = parser.parse_args(
        [*common, "--run", str(run), "--citations", *BUNDLES, "--set", "judge.signals.relevance=overlap"]
    )
    assert audit_module.run(args) == 0
    out = capsys.readouterr().out
    assert "audit summary" in out and "demo-careful" in out and "weighted" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"system": "x", "query_id": "no_such_query", "url": "https://a.example/", "rank": 1}')
    args = parser.parse_args([*common, "--run", str(tmp_path / "bad-run"), "--citations", str(bad)])
    assert audit_module.run(args) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "query_id" in err and "no_such_query" in err


def test_streaming_judge_passes_match_the_sequential_run(demo_run, tmp_path):
    """Judging crawl parts as they land gives the same scores as judging after the crawl."""
    _, summary = demo_run
    streamed = tmp_path / "streamed"
    overrides = ["cluster.stream=true", "cluster.stream_min_requests=1", "cluster.poll_s=0.2"]
    small_parts = ["crawl.shard_size=8", "crawl.flush_every=4"]
    logged: list[str] = []
    Audit(demo_config(streamed, *overrides, *small_parts), log=logged.append).run()
    passes = [line for line in logged if line.startswith("[judge] streaming")]
    assert len(passes) > 1, logged  # the judge started before the crawl had finished
    columns = ["model_name", "query_id", "source_url", "page_status", "judge_status", *DIMENSION_KEYS]
    first = summary["scores"].select(columns).to_pylist()
    second = RunStore(str(streamed)).read_table("scores/source_scores.parquet").select(columns).to_pylist()
    assert first == second


def test_every_dimension_varies_between_demo_systems(demo_run):
    """No dimension of the demo is the same for every system (freshness once was, at 2.0)."""
    scores = demo_run[1]["scores"].to_pandas()
    means = scores.groupby("model_name")[list(DIMENSION_KEYS)].mean()
    assert (means.max() - means.min() > 0.05).all(), means.T
    html = RunStore(str(demo_run[0])).read_bytes("leaderboard/report.html").decode()
    assert "Constant across all sources" not in html and "<h2>Coverage (complete)" in html


def test_scores_written_range_by_range_equal_the_whole_run_at_once(demo_run, tmp_path):
    """The scores stage holds one range of queries at a time; the file is what one join of the whole
    run gives, row for row and in the same order, however small the ranges."""
    from jobs.scoring import page_summaries, score_sources, write_source_scores
    from judge import content_vectors, judgments_dataset, read_judgments
    from judge.vectors import VECTOR_COLUMNS

    run, summary = demo_run
    store = RunStore(str(run))
    selected = store.read_table("inputs/selected_sources.parquet")
    pages = page_summaries(store.read_table("pages"))
    whole = score_sources(selected, pages, content_vectors(read_judgments(str(run), VECTOR_COLUMNS)))
    copy = RunStore(str(tmp_path / "copy"))
    for bucket_rows, folder in ((1, tmp_path / "one"), (10**6, tmp_path / "all")):
        folder.mkdir()
        counts = write_source_scores(copy, selected, pages, judgments_dataset(str(run)), folder, bucket_rows)
        assert len(list(folder.glob("judgments-*.arrow"))) == (
            len(set(selected["query_id"].to_pylist())) if bucket_rows == 1 else 1
        )
        written = copy.read_table("scores/source_scores.parquet")
        assert written.to_pylist() == whole.to_pylist()
        assert counts == {k: summary["page_status" if k == "page_status" else "judge_status"] for k in counts}


def test_judgment_check_range_by_range_finds_duplicates_and_missing_stages(demo_run, tmp_path):
    import pyarrow.parquet as pq

    run, _ = demo_run
    copy = tmp_path / "demo"
    shutil.copytree(run, copy)
    audit = Audit(demo_config(copy, "judge.plan_bucket_rows=2"))  # several ranges of queries
    requests = audit.cited_requests()
    counts = audit.check_judgments(requests)
    assert counts["requests"] > 0 and counts["judgments"] > 0
    parts = sorted((copy / "judgments").glob("*.parquet"))
    scored = next(p for p in parts if "scored" in pq.read_table(p, columns=["status"])["status"].to_pylist())
    table = pq.read_table(scored)
    pq.write_table(table, copy / "judgments" / "zz-copy.parquet")  # the same judgments committed again
    with pytest.raises(audit_module.IncompleteRunError, match=rf"{table.num_rows} judgments committed twice"):
        audit.check_judgments(requests)
    (copy / "judgments" / "zz-copy.parquet").unlink()
    keep = pc.invert(pc.and_(pc.equal(table["status"], "scored"), pc.equal(table["stage"], "meta")))
    dropped = table.num_rows - pc.sum(keep.cast("int64")).as_py()
    pq.write_table(table.filter(keep), scored)  # a stage of some requests lost
    incomplete = r"0 judgments committed twice, [1-9]\d* requests incomplete"
    with pytest.raises(audit_module.IncompleteRunError, match=incomplete):
        audit.check_judgments(requests)
    assert dropped > 0


def test_every_file_of_the_run_sits_under_a_layout_name(demo_run):
    run, _ = demo_run
    tops = {getattr(LAYOUT, f.name).split("/", 1)[0] for f in fields(LAYOUT)}
    written = {path.relative_to(run).parts[0] for path in run.rglob("*") if path.is_file()}
    assert written and written <= tops, sorted(written - tops)
    for marker in RunStore(str(run)).done_tasks(LAYOUT.audit):
        assert (run / LAYOUT.stage_marker(marker)).is_file()
    assert (run / LAYOUT.crawl_manifest).is_file() and (run / LAYOUT.crawl_summary).is_file()
    assert (run / LAYOUT.source_scores).is_file() and (run / LAYOUT.coverage).is_file()
