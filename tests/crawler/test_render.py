"""JavaScript pages through scrapy-playwright and Debian Chromium (real browser, loopback only)."""

from __future__ import annotations

import os

import pytest

from crawler.runner import read_pages, run_shard
from crawler.shards import plan_shards
from tests.crawler.conftest import loopback_config

pytestmark = pytest.mark.slow

A, B = "127.0.0.2", "127.0.0.3"


@pytest.fixture(scope="module")
def rendered(web, tmp_path_factory):
    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("Debian chromium is missing: `make setup` installs it (apt-get install chromium)")
    run = str(tmp_path_factory.mktemp("render-run"))
    paths = [(A, "/js-only"), (B, "/js-only"), (A, "/js-only?v=2"), (A, "/article/9"), (A, "/thin")]
    urls = [web.url(host, path) for host, path in paths]
    config = loopback_config(
        limits={"timeout_s": 15}, render={"policy": "auto", "pages_per_context": 2, "max_contexts": 1}
    )
    summary = run_shard(plan_shards(urls, 50)[0], run, config)
    return {"summary": summary, "rows": {r["url"]: r for r in read_pages(run).to_pylist()}, "web": web}


def test_js_only_pages_are_rendered(rendered):
    web, rows = rendered["web"], rendered["rows"]
    for url in (web.url(A, "/js-only"), web.url(B, "/js-only"), web.url(A, "/js-only?v=2")):
        row = rows[url]
        assert row["status"] == "ok" and row["rendered"], row["error"]
        assert "Rendered by JavaScript" in row["text_full"] and "Rendered by JavaScript" in row["text_main"]
        assert row["title"] == "JS app"


def test_static_pages_are_not_rendered(rendered):
    web, rows = rendered["web"], rendered["rows"]
    assert rows[web.url(A, "/article/9")]["rendered"] is False
    thin = rows[web.url(A, "/thin")]
    assert thin["status"] == "too_short" and thin["rendered"] is False  # rendering did not help: static kept


def test_subresources_go_through_the_ssrf_guard(rendered):
    web, rows = rendered["web"], rendered["rows"]
    assert web.hits[("127.0.0.9", "/secret")] == 0
    assert rendered["summary"]["render_blocked_count"] >= 3
    assert all("127.0.0.9" in url for url in rendered["summary"]["render_blocked_requests"])
    assert "PROBE-BLOCKED" in rows[web.url(A, "/js-only")]["text_full"]
    assert "SECRET-TOKEN" not in rows[web.url(A, "/js-only")]["text_full"]
