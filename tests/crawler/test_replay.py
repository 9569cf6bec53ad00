"""Crawls served from WARC files: our own parts, a WARC built from real pages, and external samples."""

from __future__ import annotations

import gzip
import json

from crawler.config import CrawlConfig
from crawler.extract import extract_page
from crawler.runner import read_pages, run_shard
from crawler.shards import plan_shards
from crawler.storage import RunStore
from crawler.warc import iter_responses, write_warc
from tests.crawler.conftest import loopback_config


def _replay_config(*warcs: str) -> CrawlConfig:
    return CrawlConfig.from_dict({"replay_warcs": list(warcs), "render": {"policy": "auto"}})


def test_replay_of_real_pages_under_their_urls(shared_data, tmp_path):
    folder = shared_data / "pages/aeb"
    truth = dict(list(json.loads((folder / "ground_truth.json").read_text()).items())[:5])
    bodies = {
        item["url"]: gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes())
        for key, item in truth.items()
    }
    archive = str(tmp_path / "pages.warc.gz")
    first = next(iter(bodies))
    responses = [
        (url, 200, [("Content-Type", "text/html; charset=utf-8")], body) for url, body in bodies.items()
    ]
    responses.append(("https://moved.example.com/old", 301, [("Location", first)], b""))
    write_warc(archive, responses)
    urls = [*bodies, "https://moved.example.com/old", "https://not-archived.example.com/x"]
    run = str(tmp_path / "run")
    summary = run_shard(plan_shards(urls, 50)[0], run, _replay_config(archive))
    rows = {r["url"]: r for r in read_pages(run).to_pylist()}
    assert summary["replay"] and len(rows) == 7
    for url, body in bodies.items():
        direct = extract_page(url, body, "text/html; charset=utf-8")
        assert rows[url]["status"] == "ok" and rows[url]["text_main"] == direct["text_main"]
    moved = rows["https://moved.example.com/old"]
    assert moved["status"] == "ok" and moved["final_url"] == first
    missing = rows["https://not-archived.example.com/x"]
    assert missing["status"] == "error" and "replay" in missing["error"]


def test_replay_of_common_crawl_style_sample(shared_data, tmp_path):
    archive = str(shared_data / "warc/resiliparse/warcfile.warc.gz")
    urls = [r.url for r in iter_responses(archive)]
    run = str(tmp_path / "run")
    summary = run_shard(plan_shards(urls, 50)[0], run, _replay_config(archive))
    table = read_pages(run)
    assert table.num_rows == len(set(urls))
    assert summary["statuses"].get("ok", 0) >= len(urls) // 2
    assert set(table.column("language").to_pylist()) - {None}  # real multilingual pages were extracted


def test_own_crawl_replays_identically(web, tmp_path):
    urls = [web.url("127.0.0.4", f"/article/{i}") for i in range(5)] + [web.url("127.0.0.4", "/redirect-ok")]
    live = str(tmp_path / "live")
    run_shard(plan_shards(urls, 50)[0], live, loopback_config())
    store = RunStore(live)
    warcs = [store.path("warc", name) for name in store.listdir("warc", suffix=".warc.gz")]
    replayed = str(tmp_path / "replayed")
    run_shard(plan_shards(urls, 50)[0], replayed, _replay_config(*warcs))
    before = {r["url"]: r for r in read_pages(live).to_pylist()}
    after = {r["url"]: r for r in read_pages(replayed).to_pylist()}
    assert before.keys() == after.keys()
    for url, row in before.items():
        assert row["status"] == "ok"
        for field in ("content_sha256", "final_url", "redirect_chain", "text_main", "title", "authors"):
            assert after[url][field] == row[field], (url, field)
