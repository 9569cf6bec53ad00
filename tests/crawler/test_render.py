"""JavaScript pages through scrapy-playwright and Debian Chromium (real browser, loopback only)."""

from __future__ import annotations

import http.server
import os
import socket
import threading

import pytest

from crawler.runner import read_pages, run_shard
from crawler.shards import plan_shards
from tests.crawler.conftest import loopback_config

# A hung browser must end as a failed test, not as a CI job that runs until its limit.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

A, B = "127.0.0.2", "127.0.0.3"


@pytest.fixture(scope="module")
def rendered(web, tmp_path_factory):
    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("Debian chromium is missing: `make setup` installs it (apt-get install chromium)")
    run = str(tmp_path_factory.mktemp("render-run"))
    paths = [
        (A, "/js-only"),
        (B, "/js-busy"),
        (B, "/js-only"),
        (A, "/js-only?v=2"),
        (A, "/article/9"),
        (A, "/thin"),
    ]
    urls = [web.url(host, path) for host, path in paths]
    # One context at a time, two renders each: a render that never ends must not hold the context
    # (and so every later render) for ever.
    render = {"policy": "auto", "pages_per_context": 2, "max_contexts": 1, "timeout_s": 5, "deadline_s": 8}
    config = loopback_config(limits={"timeout_s": 15}, render=render)
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


def test_browser_contexts_are_capped_and_recycled(rendered):
    summary = rendered["summary"]  # five renders, two per context, one context open at a time
    assert summary["render_contexts_opened"] == 3 and summary["render_contexts_max_open"] == 1


def test_a_render_that_never_ends_keeps_the_static_page(rendered):
    busy = rendered["rows"][rendered["web"].url(B, "/js-busy")]
    assert busy["status"] == "ok" and busy["rendered"] is False
    assert "Loading the busy application" in busy["text_full"]
    assert busy["error"] == "render failed (render did not finish within 8 s); static page kept"
    assert rendered["summary"]["stalls"] == []


@pytest.mark.parametrize("extract_workers", [0, 1])
def test_a_stalled_shard_is_stopped_with_a_record_per_url(web, tmp_path, extract_workers):
    """Without a render deadline that fires in time, the watchdog ends the wedged shard."""
    run = str(tmp_path / "stall-run")
    urls = [web.url(A, "/article/3"), web.url(A, "/js-busy"), web.url(B, "/js-busy?v=stall")]
    render = {"policy": "auto", "pages_per_context": 1, "max_contexts": 1, "deadline_s": 120}
    config = loopback_config(
        limits={"timeout_s": 15}, render=render, stall_timeout_s=4, extract_workers=extract_workers
    )
    summary = run_shard(plan_shards(urls, 50)[0], run, config)
    rows = {r["url"]: r for r in read_pages(run).to_pylist()}
    assert len(rows) == 3 and rows[urls[0]]["status"] == "ok"
    stuck = [rows[url] for url in urls[1:]]  # one busy render, one waiting for a context
    assert [row["status"] for row in stuck] == ["timeout", "timeout"]
    assert all("the shard stalled: no URL finished in 4 s" in row["error"] for row in stuck)
    assert summary["stalls"] and summary["attempts"] == 1 and summary["failures"] == []
    assert run_shard(plan_shards(urls, 50)[0], run, config) == summary  # done: a rerun refetches nothing


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server API)
        self.server.hits += 1
        body = self.server.body
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _listen(family: int, host: str, port: int, body: bytes) -> http.server.ThreadingHTTPServer:
    server_class = type("Server", (http.server.ThreadingHTTPServer,), {"address_family": family})
    server = server_class((host, port), _Answer)
    server.hits, server.body = 0, body
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def localhost_pair():
    """Listeners on 127.0.0.1 and ::1, one port: which one a ``localhost`` request reached."""
    for _attempt in range(20):
        v4 = _listen(socket.AF_INET, "127.0.0.1", 0, b"V4-ALLOWED")
        try:
            v6 = _listen(socket.AF_INET6, "::1", v4.server_address[1], b"V6-SECRET")
            break
        except OSError:
            v4.shutdown()
    yield v4, v6
    v4.shutdown()
    v6.shutdown()


def test_chromium_connects_only_to_checked_addresses(web, localhost_pair, tmp_path):
    """``--allowlist 127.0.0.1``: Chromium would send ``localhost`` to ::1 itself; through the pinning
    proxy it connects only to what our resolver returned and the policy checked."""
    v4, v6 = localhost_pair
    url = web.url(A, f"/js-localhost/{v4.server_address[1]}")
    render = {"policy": "always", "timeout_s": 10, "deadline_s": 20, "settle_ms": 1500}
    config = loopback_config(limits={"timeout_s": 15}, render=render, network={"allowlist": [A, "127.0.0.1"]})
    run_shard(plan_shards([url], 50)[0], str(tmp_path), config)
    (row,) = read_pages(str(tmp_path)).to_pylist()
    assert row["rendered"], row["error"]
    assert v6.hits == 0 and "V6-SECRET" not in row["text_full"]
    assert "LOCALHOST:V4-ALLOWED" in row["text_full"] and v4.hits >= 1
