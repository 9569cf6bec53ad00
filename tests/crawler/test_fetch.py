"""One shard against the loopback fault web: every URL ends with exactly one terminal status."""

from __future__ import annotations

import pytest

from crawler.layout import LAYOUT
from crawler.runner import read_pages, run_shard
from crawler.schema import PAGE_SCHEMA, PAGE_STATUSES
from crawler.shards import plan_shards
from crawler.storage import RunStore
from crawler.warc import iter_responses
from jobs.crawl import crawl_run
from tests.crawler.conftest import loopback_config

A, B = "127.0.0.2", "127.0.0.3"
EXPECTED = {
    "/article/1": "ok",
    "/404": "http_error",
    "/500": "http_error",
    "/flaky": "ok",
    "/429": "ok",
    "/429-long": "http_error",
    "/slow": "ok",
    "/hang": "timeout",
    "/reset": "error",
    "/loop-a": "error",
    "/redirect-ok": "ok",
    "/redirect-metadata": "blocked_address",
    "/redirect-private": "blocked_address",
    "/redirect-probe": "blocked_address",
    "/gzip-bomb": "too_large",
    "/oversize": "too_large",
    "/oversize-chunked": "too_large",
    "/wrong-charset": "ok",
    "/binary": "unsupported_type",
    "/image.png": "unsupported_type",
    "/binary-as-html": "unsupported_type",
    "/doc.pdf": "ok",
    "/notes.txt": "ok",
    "/thin": "too_short",
    "/private/page": "robots_disallowed",
    "/js-only": "too_short",  # render policy never
}


@pytest.fixture(scope="module")
def crawl(web, tmp_path_factory):
    run = str(tmp_path_factory.mktemp("fetch-run"))
    urls = [web.url(A, path) for path in EXPECTED]
    urls += [
        web.url(B, "/article/2"),
        web.url(B, "/article/2") + "#again",
        web.url(B, "/article/2?utm_source=x"),
    ]
    urls += [
        f"http://user:hunter2@{A}:{web.port}/article/with-credentials",
        web.url(A, "/redirect-credentials"),
        web.url(A, "/article/" + "x" * 2100),
        "http://127.0.0.9:1/secret",
        "http://10.0.0.1/",
        "ftp://example.com/file",
        f"http://localhost:{web.port}/",
    ]
    config = loopback_config(limits={"timeout_s": 2}, flush_every=7, shard_size=100)
    (shard,) = plan_shards(urls, shard_size=100)
    crawled = crawl_run(run, urls, config, use_ray=False)  # the redirect to 169.254.169.254 is round 1's
    summary = RunStore(run).done_info(LAYOUT.crawl, shard.shard_id)
    table = read_pages(run)
    by_url = {row["url"]: row for row in table.to_pylist()}
    return {
        "run": run, "crawled": crawled, "summary": summary, "table": table, "rows": by_url, "shard": shard,
        "web": web,
    }  # fmt: skip


def test_one_record_per_url_key(crawl):
    table, shard = crawl["table"], crawl["shard"]
    assert table.schema.equals(PAGE_SCHEMA)
    keys = table.column("url_key").to_pylist()
    assert len(keys) == len(set(keys)) == len(shard.entries) == len(EXPECTED) + 8
    assert set(table.column("status").to_pylist()) <= set(PAGE_STATUSES)
    assert crawl["summary"]["parts"] >= 4  # flushed every 7 records


@pytest.mark.parametrize(("path", "status"), EXPECTED.items())
def test_terminal_status(crawl, path, status):
    row = crawl["rows"][crawl["web"].url(A, path)]
    assert row["status"] == status, row["error"]
    assert (row["error"] is None) == (status == "ok")


def test_variant_spellings_fetched_once(crawl):
    web = crawl["web"]
    row = crawl["rows"][web.url(B, "/article/2")]
    assert len(row["original_urls"]) == 3
    assert web.hits[(B, "/article/2")] == 1


def test_ssrf_guard_refuses_before_connecting(crawl):
    web, rows = crawl["web"], crawl["rows"]
    assert web.hits[("127.0.0.9", "/secret")] == 0  # neither the redirect nor the direct URL reached it
    assert rows["http://127.0.0.9:1/secret"]["status"] == "blocked_address"
    assert rows["http://10.0.0.1/"]["status"] == "blocked_address"
    localhost = rows[f"http://localhost:{web.port}/"]  # a name: refused after DNS resolution
    assert localhost["status"] == "blocked_address" and "127.0.0.1" in localhost["error"]
    to_metadata = rows[web.url(A, "/redirect-metadata")]  # another host: deferred, then refused in round 1
    assert "metadata" in to_metadata["error"] and to_metadata["status"] == "blocked_address"
    assert to_metadata["redirect_chain"] == [web.url(A, "/redirect-metadata")]
    assert crawl["summary"]["deferred_redirects"] == 1
    assert crawl["crawled"]["rounds"] == 2 and crawl["crawled"]["urls"] == len(crawl["shard"].entries)
    assert rows["ftp://example.com/file"]["status"] == "error"


def test_retries_backoff_and_retry_after(crawl):
    web, rows = crawl["web"], crawl["rows"]
    assert web.hits[(A, "/flaky")] == 2 and web.hits[(A, "/500")] == 2  # retries=1
    first, second = web.times[(A, "/429")][:2]
    assert second - first >= 0.95  # Retry-After: 1 honoured
    assert web.hits[(A, "/429-long")] == 1 and "Retry-After" in rows[web.url(A, "/429-long")]["error"]
    assert rows[web.url(A, "/500")]["http_status"] == 500


def test_redirects_and_content(crawl):
    web, rows = crawl["web"], crawl["rows"]
    landed = rows[web.url(A, "/redirect-ok")]
    assert landed["final_url"] == web.url(A, "/article/landed")
    assert landed["redirect_chain"] == [web.url(A, "/redirect-ok")]
    assert "more than 5 redirects" in rows[web.url(A, "/loop-a")]["error"]
    assert rows[web.url(A, "/wrong-charset")]["title"] == "Café Zürich naïve façade"
    pdf = rows[web.url(A, "/doc.pdf")]
    assert "river birds" in pdf["text_main"] and pdf["content_type"] == "application/pdf"
    ok = rows[web.url(A, "/article/1")]
    assert ok["authors"] == ["Jane Doe"] and ok["published_date"] == "2025-06-01" and ok["language"] == "en"
    assert ok["content_sha256"] and ok["bytes"] > 1000 and ok["signals"]["has_about_link"]


def test_memory_stays_bounded(crawl):
    assert crawl["summary"]["peak_rss_mb"] < 800  # a 64 MiB gzip bomb and 9 MB pages were refused


def test_raw_responses_in_warc(crawl):
    store = RunStore(crawl["run"])
    parts = store.listdir("warc", suffix=".warc.gz")
    assert parts
    responses = [r for name in parts for r in iter_responses(store.path("warc", name))]
    web = crawl["web"]
    statuses = {(r.url, r.status) for r in responses}
    assert (web.url(A, "/redirect-ok"), 302) in statuses and (web.url(A, "/429"), 429) in statuses
    assert (web.url(A, "/article/1"), 200) in statuses


def test_rerun_of_a_done_shard_is_skipped(crawl):
    again = run_shard(crawl["shard"], crawl["run"], loopback_config())
    assert again == crawl["summary"]


def test_credentials_are_neither_stored_nor_sent(crawl):
    web, table = crawl["web"], crawl["table"]
    stored = str(table.select(["url", "original_urls", "final_url", "redirect_chain", "error"]).to_pylist())
    assert "hunter2" not in stored and "user:" not in stored
    assert crawl["rows"][web.url(A, "/article/with-credentials")]["status"] == "ok"
    redirected = crawl["rows"][web.url(A, "/redirect-credentials")]
    assert redirected["status"] == "ok", redirected["error"]
    assert redirected["final_url"] == web.url(A, "/article/after-credentials")
    assert web.hits[(A, "/article/with-credentials")] == 1
    assert web.authorizations == []


def test_over_long_url_ends_with_its_reason(crawl):
    row = crawl["rows"][crawl["web"].url(A, "/article/" + "x" * 2100)]
    assert row["status"] == "error"
    assert row["error"].startswith("URL too long: 2") and "max_url_chars (2083)" in row["error"]
