"""End to end: a three-language sweep of the public queries, collected from scripted engines that cite
pages of the bundled demo archive plus a SERP file, goes through the audit (WARC replay, signals judge,
local Ray) in the same run directory."""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile

import pytest

from crawler.storage import RunStore
from jobs.cli import main
from jobs.collectors import expand_templates, load_template_file, stratified_sample
from tests.jobs.test_collect import REPO, ScriptedServer, archived_urls

pytestmark = pytest.mark.slow
TEMPLATE = REPO / "jobs/collectors/templates/sourcebench_public_v1_multilingual.yaml"


@pytest.fixture
def local_ray(monkeypatch):
    import ray

    monkeypatch.setenv("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE", "disabled"))
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    temp = tempfile.mkdtemp(prefix="sbc-ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    ray.init(num_cpus=4, include_dashboard=False, _temp_dir=temp)
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_multilingual_sweep_is_audited_end_to_end(local_ray, tmp_path):
    server = ScriptedServer(archived_urls())
    queries = stratified_sample(expand_templates(load_template_file(TEMPLATE), ["en", "de", "fr"]), 1, seed=7)
    serp = tmp_path / "serp.csv"  # the search engine ranks the first two pages engine-a cites, and one other
    serp.write_text(
        "query_id,rank,url\n"
        + "".join(
            f"{q['query_id']},{rank},{url}\n"
            for q in queries.to_pylist()
            for rank, url in enumerate(
                [*server.urls_for(q["query"])[:2], server.urls_for(q["query"][::-1])[0]], 1
            )
        )
    )
    systems = tmp_path / "systems.json"
    systems.write_text(json.dumps([
        {"name": "engine-a", "model_name": "m", "api_base": server.base("annot")},
        {"name": "engine-b", "model_name": "m", "api_base": server.base("search"), "api": "responses",
         "web_search_mode": "tool"},
        {"kind": "serp", "name": "search-engine", "results_path": str(serp)},
    ]))  # fmt: skip
    run = tmp_path / "run"
    try:
        sweep = ["--template", TEMPLATE, "--languages", "en,de,fr", "--sample-per-stratum", 1, "--seed", 7]
        code = main(["collect", *map(str, sweep), "--systems", str(systems), "--out", str(run)])
    finally:
        server.close()
    assert code == 0
    code = main(["audit", "--config", str(REPO / "jobs/configs/demo.yaml"), "--run", str(run),
                 "--queries", str(run / "queries.csv"), "--citations", str(run / "citations.parquet"),
                 "--set", f"crawl.replay_warcs=[{REPO / 'jobs/demo/demo.warc.gz'}]",
                 "--set", "inputs.serp={}"])  # the sweep's own SERP, not the demo's  # fmt: skip
    assert code == 0
    store = RunStore(str(run))
    scores = store.read_table("scores/source_scores.parquet").to_pylist()
    assert {r["model_name"] for r in scores} == {"engine-a", "engine-b", "search-engine"}
    assert {r["language"] for r in scores} == {"en", "de", "fr"}
    assert all(r["page_status"] == "ok" for r in scores)  # every cited page is in the archive
    board = store.read_json("leaderboard/leaderboard_data.json")
    assert {row["model_name"] for row in board["overall"]} == {"engine-a", "engine-b", "search-engine"}
    # the report finds the SERP system in collect/manifest.json: 2 of engine-a's 3 pages are in its results
    overlap = {r["system"]: r for r in read_csv(run / "leaderboard/analysis/serp_overlap.csv")}
    assert overlap["engine-a"]["serp_system"] == "search-engine"
    assert float(overlap["engine-a"]["url_overlap_pct"]) == pytest.approx(200 / 3)
    by_language = read_csv(run / "leaderboard/analysis/by_language.csv")
    assert {"en", "de", "fr"} <= set(by_language[0]) and len(by_language) == 3


def read_csv(path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))
