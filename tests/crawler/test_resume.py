"""kill -9 in the middle of a shard, restart: only what is missing is fetched, one record per url_key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from crawler.runner import read_pages
from crawler.storage import RunStore
from tests.crawler.loopweb import LoopbackWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
HOSTS = ["127.0.0.6", "127.0.0.7"]


def _parts(run: str) -> list[str]:
    return RunStore(run).listdir("pages", suffix=".parquet")


def _crawl_command(run: str, urls: Path, config: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "jobs.crawl",
        "--run",
        run,
        "--urls",
        str(urls),
        "--config",
        str(config),
        "--no-ray",
    ]


def test_kill_9_mid_shard_then_resume(tmp_path):
    web = LoopbackWeb(HOSTS, latency_s=0.3).start()
    try:
        urls = [web.url(HOSTS[i % 2], f"/article/{i}") for i in range(60)]
        url_file = tmp_path / "urls.txt"
        url_file.write_text("\n".join(urls) + "\n")
        config = tmp_path / "crawl.yaml"
        config.write_text(yaml.safe_dump({"crawl": {
            "network": {"allowlist": HOSTS}, "render": {"policy": "never"}, "flush_every": 4,
            "politeness": {"per_host_concurrency": 1, "autothrottle": False},
        }}))  # fmt: skip
        run = str(tmp_path / "run")
        first = subprocess.Popen(_crawl_command(run, url_file, config), cwd=REPO, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 60
        while len(_parts(run)) < 2:
            assert time.monotonic() < deadline, "no part committed within 60 s"
            assert first.poll() is None, "the crawl ended before it could be killed"
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)  # the parent only, as when a Ray worker dies
        first.wait(10)
        time.sleep(1.5)
        committed_before = read_pages(run)
        time.sleep(1.5)
        assert read_pages(run).num_rows == committed_before.num_rows  # the shard subprocess died with it
        assert 0 < committed_before.num_rows < len(urls)
        hits_before = sum(web.hits[(h, p)] for h, p in list(web.hits) if p.startswith("/article/"))

        second = subprocess.run(
            _crawl_command(run, url_file, config), cwd=REPO, capture_output=True, timeout=120
        )
        assert second.returncode == 0, second.stderr.decode()[-2000:]
        table = read_pages(run)
        keys = table.column("url_key").to_pylist()
        assert len(keys) == len(set(keys)) == len(urls)
        assert set(table.column("status").to_pylist()) == {"ok"}
        for url in committed_before.column("url").to_pylist():
            host, path = url.split("//", 1)[1].split(":", 1)[0], "/" + url.split("/", 3)[3]
            assert web.hits[(host, path)] == 1, f"{url} was fetched again"
        hits_after = sum(web.hits[(h, p)] for h, p in list(web.hits) if p.startswith("/article/"))
        assert hits_after - hits_before <= len(urls) - committed_before.num_rows
        assert RunStore(run).is_done("crawl", "shard-00000")
    finally:
        web.stop()
