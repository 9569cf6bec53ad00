"""The report end to end on a synthetic run whose overlaps, counts and statuses are known by design.

The run is written with the project's real pieces (RunStore, the page, judgment, citation and score
schemas, and the Ray Data reduce from ``scores/`` to ``leaderboard/``), then ``write_report`` reads it
back like any run. A browser test opens the HTML in headless Chromium.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.stats import spearmanr

from crawler.errors import InputError
from crawler.schema import PAGE_SCHEMA
from crawler.storage import RunStore
from jobs import report as report_cli
from jobs.analysis import ReportConfig, system_intervals, write_report
from jobs.ray_runtime import RayConfig, ensure_ray
from jobs.reduce import ReduceConfig, reduce_run
from jobs.schemas import CITATIONS_SCHEMA, QUERIES_SCHEMA, QUERY_TYPES, SOURCE_SCORES_SCHEMA
from judge.rubric import DIMENSION_KEYS, STAGES, stage_dimensions
from judge.schema import JUDGMENT_SCHEMA

SERP = "serp-google"
#: system -> (sources that are SERP URLs, sources that only share a SERP domain, quality offset)
PROFILES = {
    "alpha": (0, 1, 1.0),
    "beta": (1, 1, 0.4),
    "epsilon": (1, 1, 0.4),  # same quality as beta: their intervals overlap (a tie)
    "gamma": (2, 0, -0.2),
    "delta": (4, 1, -1.0),
}
SOURCES_PER_QUERY = 5
N_QUERIES = 20


def _key(url: str) -> str:
    return hashlib.sha1(url.encode()).hexdigest()[:20]


def _citations() -> pd.DataFrame:
    rows = []
    for q in range(1, N_QUERIES + 1):
        serp_urls = [f"https://www.serp{j}-site.com/q{q}/page" for j in range(1, 11)]
        rows += [(SERP, str(q), url, rank) for rank, url in enumerate(serp_urls, start=1)]
        for system, (url_hits, domain_hits, _) in PROFILES.items():
            # The same page as the SERP, spelled differently (host case, tracking parameter, fragment).
            urls = [u.replace("www.serp", "WWW.Serp") + "?utm_source=ai#top" for u in serp_urls[:url_hits]]
            urls += [f"https://news.serp{j + 5}-site.com/other/{system}" for j in range(domain_hits)]
            urls += [f"https://{system}-own{i}.org/q{q}" for i in range(SOURCES_PER_QUERY - len(urls))]
            rows += [(system, str(q), url, rank) for rank, url in enumerate(urls, start=1)]
    return pd.DataFrame(rows, columns=["system", "query_id", "url", "rank"])


def _page_status(system: str, query: int, rank: int) -> str:
    """Failures by design, on pages cited by one system for one query only (rank 5 is an own page)."""
    if system == "beta" and rank == 5 and query % 5 == 0:
        return "http_error"  # queries 5, 10, 15, 20
    if system == "gamma" and rank == 5 and query % 7 == 0:
        return "timeout"  # queries 7, 14
    if system == "alpha" and rank == 5 and query == 3:
        return "robots_disallowed"
    return "ok"


def build_run(uri: str, rng_seed: int = 0) -> dict[str, object]:
    """Write a complete synthetic run at ``uri`` (local or s3://); returns counts the tests check."""
    store = RunStore(uri)
    rng = np.random.default_rng(rng_seed)
    citations = _citations()
    queries = pd.DataFrame(
        {
            "query_id": [str(q) for q in range(1, N_QUERIES + 1)],
            "query": [f"synthetic question {q}" for q in range(1, N_QUERIES + 1)],
            "query_type": [QUERY_TYPES[(q - 1) % 5] for q in range(1, N_QUERIES + 1)],
            "language": ["en" if q % 2 else "de" for q in range(1, N_QUERIES + 1)],
        }
    )
    qmeta = queries.set_index("query_id")
    full = citations.assign(
        query_text=citations["query_id"].map(qmeta["query"]),
        answer_text=None,
        language=citations["query_id"].map(qmeta["language"]),
        agg_source_id=None,
        selected_topk=None,
    )
    store.write_table("inputs/citations.parquet", pa.Table.from_pandas(full, schema=CITATIONS_SCHEMA))
    store.write_table("inputs/queries.parquet", pa.Table.from_pandas(queries, schema=QUERIES_SCHEMA))

    # Pages: one record per canonical URL (the crawler's contract); statuses by design.
    canon = citations["url"].str.replace("WWW.Serp", "www.serp").str.replace("?utm_source=ai#top", "")
    status = [
        _page_status(s, int(q), r)
        for s, q, r in zip(citations["system"], citations["query_id"], citations["rank"], strict=True)
    ]
    pages = pd.DataFrame({"url": canon, "status": status}).drop_duplicates("url")
    pages = pd.DataFrame(
        {
            "url_key": pages["url"].map(_key),
            "url": pages["url"],
            "status": pages["status"],
            "error": pages["status"].map(
                {"ok": None, "http_error": "HTTP 404 Not Found", "timeout": "read timeout"}
            ),
            "http_status": pages["status"].map({"ok": 200, "http_error": 404, "timeout": None}),
        }
    )
    page_table = pa.table(
        {
            f.name: pa.array(pages[f.name], f.type) if f.name in pages else pa.nulls(len(pages), f.type)
            for f in PAGE_SCHEMA
        }  # fmt: skip
    )
    store.write_table("pages/part-00000.parquet", page_table.cast(PAGE_SCHEMA))

    # Scores for the sources whose page was fetched: integer 1-5 around a per-system quality level.
    ok = citations[[s == "ok" for s in status]]
    ok = ok[(ok["system"] != SERP) | (ok["rank"] <= SOURCES_PER_QUERY)]
    offsets = ok["system"].map({**{s: p[2] for s, p in PROFILES.items()}, SERP: -0.5}).to_numpy()
    scores = {
        key: np.clip(np.rint(3.4 + offsets + rng.normal(0, 0.9, len(ok))), 1, 5) for key in DIMENSION_KEYS
    }
    scores["freshness"][::17] = np.nan  # some incomplete sources
    source_scores = pd.DataFrame(
        {
            "model_name": ok["system"].to_numpy(),
            "query_id": ok["query_id"].to_numpy(),
            "query_type": ok["query_id"].map(qmeta["query_type"]).to_numpy(),
            "agg_source_id": [f"s{i}" for i in range(len(ok))],
            "source_url": ok["url"].to_numpy(),
            "text_content_length": 2000.0,
            "language": ok["query_id"].map(qmeta["language"]).to_numpy(),
            **scores,
        }
    )
    scores_table = pa.Table.from_pandas(source_scores, schema=SOURCE_SCORES_SCHEMA, preserve_index=False)
    store.write_table("scores/part-00000.parquet", scores_table)
    reduce_run(uri, ReduceConfig())  # the project's reduce (Ray Data): scores/ -> leaderboard/

    # Judgments: three stages per (page, query) judged; one unscorable meta stage.
    judged = ok.assign(url_key=canon[ok.index].map(_key))[["url_key", "query_id"]].drop_duplicates()
    rows = []
    for i, (url_key, query_id) in enumerate(judged.itertuples(index=False)):
        for stage, prompt, cached in zip(STAGES, (1800, 1500, 1200), (1400, 1300, 1100), strict=True):
            unscorable = i == 0 and stage == "meta"
            rows.append(
                {
                    "judgment_key": f"{url_key}-{query_id}-{stage}",
                    "url_key": url_key,
                    "query_id": query_id,
                    "stage": stage,
                    "status": "unscorable" if unscorable else "scored",
                    "scores": [
                        {"dimension": d.key, "score": 4, "justification": "synthetic"}
                        for d in stage_dimensions(stage)
                    ],
                    "engine": "vllm",
                    "model": "Qwen3-8B",
                    "rubric_version": "sb-rubric-2",
                    "prompt_layout": "shared",
                    "prompt_tokens": prompt,
                    "cached_prompt_tokens": cached,
                    "output_tokens": 90,
                    "truncated_chars": 500 if i % 10 == 0 else 0,
                    "latency_s": 0.5,
                }
            )
    store.write_table("judgments/part-00000.parquet", pa.Table.from_pylist(rows, schema=JUDGMENT_SCHEMA))
    store.write_json(
        "manifest.json",
        {
            "run": uri.rstrip("/").rsplit("/", 1)[-1],
            "code_version": {"git": "0123456789abcdef", "dirty": False, "package": "0.1.0"},
            "config": {"judge": {"engine": "vllm", "model": "Qwen3-8B"}, "crawl": {"render": "auto"}},
            "stages": {"crawl": {"status": "done", "wall_s": 12.5}},
        },
    )
    return {"num_pages": len(pages), "num_judgments": len(rows), "num_sources": len(source_scores)}


# -- tests ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_ray():
    import ray

    ensure_ray(RayConfig(num_cpus=2))
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def synthetic_run(local_ray, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("report") / "synthetic"
    facts = build_run(str(root))
    write_report(str(root), serp_systems=[SERP])
    return root, facts


def _csv(root: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(root / "leaderboard" / "analysis" / f"{name}.csv", dtype={"query_id": str})


def test_serp_overlap_is_exact_at_url_and_domain_level(synthetic_run) -> None:
    root, _ = synthetic_run
    overlap = _csv(root, "serp_overlap").set_index("system")
    assert sorted(overlap.index) == sorted(PROFILES)
    for system, (url_hits, domain_hits, _) in PROFILES.items():
        row = overlap.loc[system]
        assert row["num_queries"] == N_QUERIES
        assert row["num_sources"] == N_QUERIES * SOURCES_PER_QUERY
        assert row["url_overlap_pct"] == pytest.approx(100.0 * url_hits / SOURCES_PER_QUERY)
        assert row["domain_overlap_pct"] == pytest.approx(
            100.0 * (url_hits + domain_hits) / SOURCES_PER_QUERY
        )
    # Score vs overlap across systems: Spearman from scipy on the joined columns.
    stats = _csv(root, "score_vs_overlap").set_index("level")
    expected = spearmanr(overlap["url_overlap_pct"], overlap["weighted_total_content_score"]).statistic
    assert stats.loc["url", "spearman_rho"] == pytest.approx(expected)
    assert stats.loc["url", "spearman_rho"] < -0.8  # the designed inverse relation


def test_intervals_ties_and_breakdowns_match_independent_computations(synthetic_run) -> None:
    root, _ = synthetic_run
    sources = pd.read_parquet(root / "leaderboard" / "source_metrics.parquet")
    board = _csv(root, "leaderboard_intervals").set_index("model_name")
    # The reduce's streaming intervals equal the analysis bootstrap on one row per source.
    again = system_intervals(sources, n_boot=1000, seed=0).set_index("model_name")
    for column in again.columns:
        assert board[column].to_numpy() == pytest.approx(again.loc[board.index, column].to_numpy())
    assert set(board.loc["beta", "weighted_tied_with"].split(";")) >= {"epsilon"}
    assert board["rank"].tolist() == list(range(1, len(board) + 1))
    assert board.index[0] == "alpha" and board.index[-1] == "delta"

    by_type = _csv(root, "by_query_type").set_index("model_name")
    expected = sources.groupby(["model_name", "query_type"])["weighted_total_content_score"].mean()
    for (system, query_type), value in expected.items():
        assert by_type.loc[system, query_type] == pytest.approx(value)
    by_language = _csv(root, "by_language").set_index("model_name")
    assert by_language.loc["alpha", "de"] == pytest.approx(
        sources.query("model_name == 'alpha' and language == 'de'")["weighted_total_content_score"].mean()
    )

    corr = _csv(root, "dimension_correlations").set_index("dimension")
    pair = sources[["factual_accuracy", "freshness"]].dropna()
    rho = spearmanr(pair["factual_accuracy"], pair["freshness"]).statistic
    assert corr.loc["factual_accuracy", "freshness"] == pytest.approx(rho)
    assert np.allclose(np.diag(corr[list(DIMENSION_KEYS)].loc[list(DIMENSION_KEYS)]), 1.0)

    pairwise = _csv(root, "pairwise_win_probability").set_index(["system_a", "system_b"])
    assert pairwise.loc[("alpha", "delta"), "p_a_beats_b"] == 1.0
    assert pairwise.loc[("beta", "epsilon"), "p_a_beats_b"] + pairwise.loc[
        ("epsilon", "beta"), "p_a_beats_b"
    ] == pytest.approx(1.0)


def test_crawl_funnel_and_judge_usage(synthetic_run) -> None:
    root, facts = synthetic_run
    statuses = _csv(root, "crawl_statuses").set_index("status")["pages"].to_dict()
    assert statuses == {"ok": facts["num_pages"] - 7, "http_error": 4, "robots_disallowed": 1, "timeout": 2}
    reasons = _csv(root, "crawl_failure_reasons")
    assert ("http_error", "HTTP 404 Not Found", 4) in set(reasons.itertuples(index=False, name=None))
    usage = _csv(root, "judge_usage")
    total = usage[usage["engine"] == "total"].iloc[0]
    judged = facts["num_judgments"] // 3
    assert total["requests"] == facts["num_judgments"]
    assert total["unscorable"] == 1
    assert total["prompt_tokens"] == judged * (1800 + 1500 + 1200)
    assert total["cache_hit_pct"] == pytest.approx(100.0 * (1400 + 1300 + 1100) / (1800 + 1500 + 1200))
    domains = _csv(root, "top_domains").set_index("domain")
    # serp5-site.com: SERP rank 5 for every query, plus every system's domain-only page except gamma's.
    assert domains.loc["serp5-site.com", "systems"] == len(PROFILES)  # the SERP and 4 of the 5 systems
    funnel = _csv(root, "crawl_funnel").set_index("step")["count"]
    assert funnel["sources on the leaderboard"] == facts["num_sources"]


def test_report_files_are_self_contained(synthetic_run) -> None:
    root, _ = synthetic_run
    html = (root / "leaderboard" / "report.html").read_text()
    for anchor in ("leaderboard", "dimensions", "query-types", "correlations", "overlap", "crawl", "judge"):
        assert f'<section id="{anchor}">' in html
    for key in ("leaderboard", "correlations", "overlap", "dimensions", "crawl_status", "tokens"):
        assert f'id="fig-{key}"' in html
        assert (root / "leaderboard" / "figures" / f"{key}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Nothing is loaded from anywhere: every src is a data: URI, every href an in-page anchor.
    assert re.findall(r'src="(?!data:image/png;base64,)', html) == []
    assert re.findall(r'href="(?!#)', html) == []
    assert "<script" not in html and "@import" not in html and "url(" not in html
    markdown = (root / "leaderboard" / "report.md").read_text()
    for key in ("leaderboard", "correlations", "overlap"):
        assert f"(figures/{key}.png)" in markdown
    assert "| 1 | alpha |" in markdown


def test_ablation_correctness_and_cost_from_metadata(synthetic_run, tmp_path: Path) -> None:
    root, _ = synthetic_run
    meta = tmp_path / "systems.csv"
    meta.write_text(
        "system,model,retrieval_tool\nalpha,chat,gensee\nbeta,chat,tavily\ngamma,reasoner,gensee\n"
        "delta,reasoner,tavily\n"
    )
    sources = pd.read_parquet(root / "leaderboard" / "source_metrics.parquet")
    labels = sources[["model_name", "query_id"]].drop_duplicates().rename(columns={"model_name": "system"})
    labels = labels[labels["system"] != SERP]
    labels["correct"] = (labels["system"].isin(["alpha", "beta"])).astype(int)
    labels_path = tmp_path / "correct.csv"
    labels.to_csv(labels_path, index=False)
    prices = {"usd_per_1m_prompt_tokens": 1.0, "usd_per_1m_output_tokens": 4.0}
    config = ReportConfig(system_metadata=str(meta), correctness_labels=str(labels_path), prices=prices)
    written = write_report(str(root), config=config, serp_systems=[SERP])
    assert "analysis/ablation_model_x_retrieval_tool.csv" in written
    ablation = _csv(root, "ablation_model_x_retrieval_tool").set_index("model")
    mean = sources.groupby("model_name")["weighted_total_content_score"].mean()
    assert ablation.loc["chat", "gensee"] == pytest.approx(mean["alpha"])
    assert ablation.loc["reasoner", "tavily"] == pytest.approx(mean["delta"])
    chat = sources[sources["model_name"].isin(["alpha", "beta"])]["weighted_total_content_score"].mean()
    assert ablation.loc["chat", "mean"] == pytest.approx(chat)

    correctness = _csv(root, "correctness_correlations").set_index("score")
    per_query = sources[sources["model_name"] != SERP].groupby(["model_name", "query_id"])["authority"].mean()
    truth = per_query.index.get_level_values(0).isin(["alpha", "beta"]).astype(float)
    assert correctness.loc["authority", "spearman_rho"] == pytest.approx(
        spearmanr(per_query, truth).statistic
    )
    assert correctness.loc["authority", "n"] == len(per_query)
    assert all(c in _doc_row("correctness_correlations.csv") for c in correctness.reset_index().columns)

    usage = _csv(root, "judge_usage")
    total = usage[usage["engine"] == "total"].iloc[0]
    uncached = total["prompt_tokens"] - total["cached_prompt_tokens"]
    cost = (uncached * 1.0 + total["cached_prompt_tokens"] * 1.0 + total["output_tokens"] * 4.0) / 1e6
    assert total["cost_usd"] == pytest.approx(cost)
    assert "Ablations by system factor" in (root / "leaderboard" / "report.md").read_text()
    html = (root / "leaderboard" / "report.html").read_text()
    assert 'id="fig-ablation_model_x_retrieval_tool"' in html and 'id="fig-correctness"' in html
    assert "cost (USD)" in html


def test_minimal_run_gets_a_report_with_notes_and_a_missing_one_an_error(
    synthetic_run, tmp_path: Path
) -> None:
    root, _ = synthetic_run
    minimal = tmp_path / "minimal"
    (minimal / "leaderboard").mkdir(parents=True)
    (minimal / "leaderboard" / "source_metrics.csv").write_bytes(
        (root / "leaderboard" / "source_metrics.csv").read_bytes()
    )
    written = write_report(str(minimal))
    html = (minimal / "leaderboard" / "report.html").read_text()
    assert "No SERP system given" in html and "has no page records" in html and "no manifest.json" in html
    assert "analysis/leaderboard_intervals.csv" in written  # intervals computed by the report itself
    board = pd.read_csv(minimal / "leaderboard" / "analysis" / "leaderboard_intervals.csv")
    assert board["weighted_ci_low"].notna().all()
    with pytest.raises(InputError, match="no source_metrics"):
        write_report(str(tmp_path / "empty"))


def test_cli_on_an_s3_run(synthetic_run, s3_bucket: str, capsys) -> None:
    root, _ = synthetic_run
    uri = f"s3://{s3_bucket}/audits/synthetic"
    store = RunStore(uri)
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "leaderboard/analysis" not in str(p)):
        store.write_bytes(str(path.relative_to(root)), path.read_bytes())
    parser = argparse.ArgumentParser()
    report_cli.add_arguments(parser)
    args = parser.parse_args(["--run", uri, "--serp-system", SERP, "--n-boot", "200"])
    assert report_cli.run(args) == 0
    assert f"report: {uri}/leaderboard/report.html" in capsys.readouterr().out
    assert store.read_bytes("leaderboard/report.html").startswith(b"<!DOCTYPE html>")
    overlap = pd.read_csv(io.BytesIO(store.read_bytes("leaderboard/analysis/serp_overlap.csv")))
    assert overlap.set_index("system").loc["delta", "url_overlap_pct"] == pytest.approx(80.0)


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.mark.slow
def test_report_renders_in_headless_chromium(synthetic_run, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    root, _ = synthetic_run
    report = (root / "leaderboard" / "report.html").resolve()
    if not Path("/usr/bin/chromium").exists():
        pytest.fail("Debian chromium is missing: run `make setup` (apt-get install chromium)")
    console: list[tuple[str, str]] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda message: console.append((message.type, message.text)))
            page.on("pageerror", lambda error: console.append(("pageerror", str(error))))
            page.on("request", lambda request: requests.append(request.url))
            page.goto(report.as_uri(), wait_until="load")
            assert page.title() == "SourceBench audit: synthetic"
            assert page.locator("#leaderboard table tbody tr").count() == len(PROFILES) + 1
            assert (
                page.locator("#leaderboard table tbody tr").first.locator("td").nth(1).inner_text() == "alpha"
            )
            for key in (
                "leaderboard",
                "win_probability",
                "dimensions",
                "correlations",
                "overlap",
                "crawl_status",
            ):
                image = page.locator(f"#fig-{key} img")
                assert image.count() == 1, key
                assert image.evaluate("img => img.complete && img.naturalWidth > 300"), key
                assert image.bounding_box()["width"] > 300, key
            assert page.locator("nav a").count() == page.locator("main section").count() >= 10
            assert "Overlap with search-engine results" in page.locator("#overlap h2").inner_text()
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert [m for m in console if m[0] in ("error", "pageerror")] == []
    assert all(url.startswith(("file://", "data:")) for url in requests), requests
    assert (tmp_path / "report.png").stat().st_size > 50_000


def test_serp_systems_and_factors_come_from_the_collect_manifest(synthetic_run, tmp_path: Path) -> None:
    import shutil

    root, _ = synthetic_run
    run = tmp_path / "collected"
    shutil.copytree(root, run, ignore=shutil.ignore_patterns("analysis", "figures", "report.*"))
    endpoint = {"kind": "endpoint", "api": "chat", "api_base": "http://127.0.0.1:1/v1"}
    systems = [
        {**endpoint, "name": "alpha", "model_name": "chat", "web_search_mode": "tool",
         "web_search_tool": {"type": "gensee"}},
        {**endpoint, "name": "beta", "model_name": "chat", "web_search_mode": "tool",
         "web_search_tool": {"type": "tavily"}},
        {**endpoint, "name": "gamma", "model_name": "reasoner", "web_search_mode": "tool",
         "web_search_tool": {"type": "gensee"}},
        {**endpoint, "name": "delta", "model_name": "reasoner", "web_search_mode": "tool",
         "web_search_tool": {"type": "tavily"}},
        {"kind": "serp", "name": SERP, "results_path": "serp.csv"},
    ]  # fmt: skip
    RunStore(str(run)).write_json("collect/manifest.json", {"stage": "collect", "systems": systems})
    written = write_report(str(run))
    assert "analysis/serp_overlap.csv" in written  # SERP system found without --serp-system
    table = pd.read_csv(run / "leaderboard" / "analysis" / "ablation_model_name_x_web_search_tool.csv")
    sources = pd.read_parquet(run / "leaderboard" / "source_metrics.parquet")
    gamma = sources.query("model_name == 'gamma'")["weighted_total_content_score"].mean()
    assert table.set_index("model_name").loc["reasoner", "gensee"] == pytest.approx(gamma)


DOCS = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text()


def _doc_row(file_name: str) -> str:
    rows = [
        line
        for line in DOCS.splitlines()
        if line.startswith("| `") and f"`{file_name}`" in line.split("|")[1]
    ]
    assert rows, f"docs/report.md has no table row for {file_name}"
    return rows[0]


@pytest.mark.parametrize(
    "name",
    [
        "pairwise_win_probability",
        "serp_overlap",
        "score_vs_overlap",
        "score_by_serp_presence",
        "crawl_funnel",
        "crawl_statuses",
        "crawl_failure_reasons",
        "judge_usage",
        "top_domains",
    ],
)
def test_every_analysis_column_is_documented(synthetic_run, name: str) -> None:
    root, _ = synthetic_run
    row = _doc_row(f"{name}.csv")
    missing = [c for c in _csv(root, name).columns if c not in row]
    assert not missing, f"docs/report.md does not document {name}.csv columns {missing}"


def test_calibration_results_appear_in_the_report(synthetic_run, tmp_path: Path) -> None:
    import shutil

    from jobs import calibrate as calibrate_cli

    root, _ = synthetic_run
    run = tmp_path / "calibrated"
    shutil.copytree(root, run, ignore=shutil.ignore_patterns("analysis", "figures", "report.*"))
    pages = pd.read_parquet(run / "pages", columns=["url", "status"]).query("status == 'ok'").head(6)
    scored = pd.read_parquet(run / "judgments", columns=["url_key", "query_id"]).drop_duplicates("url_key")
    keys = pd.read_parquet(run / "pages", columns=["url_key", "url"]).merge(scored, on="url_key")
    labels = keys[keys["url"].isin(pages["url"])].assign(annotator="ann", **{d: 4 for d in DIMENSION_KEYS})
    labels[["query_id", "url", "annotator", *DIMENSION_KEYS]].to_csv(tmp_path / "human.csv", index=False)
    parser = argparse.ArgumentParser()
    calibrate_cli.add_arguments(parser)
    assert (
        calibrate_cli.run(parser.parse_args(["--labels", str(tmp_path / "human.csv"), "--run", str(run)]))
        == 0
    )
    write_report(str(run))
    html = (run / "leaderboard" / "report.html").read_text()
    assert '<section id="calibration">' in html
    assert "Judge configuration vllm/Qwen3-8B/shared/sb-rubric-2 passes" in html


def test_complete_policy_analyses_use_the_sources_the_reduce_counted(synthetic_run, tmp_path: Path) -> None:
    import shutil

    root, _ = synthetic_run
    run = tmp_path / "complete"
    shutil.copytree(root, run, ignore=shutil.ignore_patterns("leaderboard"))
    reduce_run(str(run), ReduceConfig(policy="complete"))
    write_report(str(run), serp_systems=[SERP])
    sources = pd.read_parquet(run / "leaderboard" / "source_metrics.parquet")
    complete = sources[sources["score_complete"]]
    board = _csv(run, "leaderboard_intervals").set_index("model_name")
    again = system_intervals(complete, n_boot=1000, seed=0).set_index("model_name")
    assert board["weighted_ci_low"].to_numpy() == pytest.approx(
        again.loc[board.index, "weighted_ci_low"].to_numpy()
    )
    official = pd.read_csv(run / "leaderboard" / "leaderboard_by_query_type.csv").set_index(
        ["model_name", "query_type"]
    )
    by_type = _csv(run, "by_query_type").set_index("model_name")
    for (system, query_type), value in official["weighted_total_content_score"].items():
        assert by_type.loc[system, query_type] == pytest.approx(value)
    assert "reduce policy" in (run / "leaderboard" / "report.md").read_text()


def test_report_settings_from_yaml(tmp_path: Path) -> None:
    settings = tmp_path / "audit.yaml"
    settings.write_text("store: {run: runs/x}\nreport:\n  n_boot: 50\n  serp_systems: [google]\n")
    config = ReportConfig.from_yaml(str(settings))
    assert config.n_boot == 50 and config.serp_systems == ["google"]
    (tmp_path / "bad.yaml").write_text("n_boot: 0\n")
    with pytest.raises(
        InputError, match="bad.yaml, field 'n_boot': Input should be greater than or equal to 1"
    ):
        ReportConfig.from_yaml(str(tmp_path / "bad.yaml"))
