"""Progress of long stages: plain lines in a log, and live lines on a terminal (a real pseudo-terminal)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyarrow as pa
import pytest

from crawler.storage import RunStore
from jobs.progress import StageProgress, crawl_progress, progress_line
from tests.jobs.loopback import LoopbackWeb

REPO = Path(__file__).resolve().parents[2]


def test_progress_line_has_count_rate_and_eta():
    line = progress_line("crawl", 120, 500, "pages", elapsed=40.0, start=0)
    assert line == "[crawl] 120/500 pages (24 %), 3.0 pages/s, ETA 2m06s"
    assert progress_line("judge", 30, None, "judgments", elapsed=10.0, start=10) == (
        "[judge] 30 judgments, 2.0 judgments/s"
    )


def test_not_a_terminal_gets_plain_lines_from_what_the_store_holds(tmp_path):
    store = RunStore(str(tmp_path))
    store.write_json("crawl/manifest.json", {"urls": 4})
    log = io.StringIO()
    with crawl_progress(store, stream=log, interval_s=0.05, log_every_s=0.1):
        for part in range(2):  # two committed parts of two page records each
            store.write_table(f"pages/part-{part}.parquet", pa.table({"url_key": ["a", "b"]}))
            time.sleep(0.3)
    lines = log.getvalue().splitlines()
    assert lines and all(line.startswith("[crawl] ") for line in lines)
    assert lines[-1].startswith("[crawl] 4/4 pages (100 %)")
    assert "\r" not in log.getvalue()  # no bar redraws in a log


def test_a_terminal_gets_a_redrawn_bar(tmp_path):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    done = {"n": 0}
    out = Terminal()
    with StageProgress("judge", lambda: done["n"], lambda: 10, "judgments", stream=out, interval_s=0.05):
        for _ in range(10):
            done["n"] += 1
            time.sleep(0.02)
    assert "[judge]" in out.getvalue() and "10/10" in out.getvalue() and "\r" in out.getvalue()


def _read_pty(fd: int, process: subprocess.Popen, timeout_s: float) -> str:
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_audit_under_a_terminal_shows_crawl_and_judge_progress(tmp_path):
    """A crawl of 40 slow pages and their judging, run as a user would, in a pseudo-terminal."""
    web = LoopbackWeb(delay_s=0.25)
    queries = tmp_path / "queries.csv"
    queries.write_text("query_id,query,query_type\nq1,How do volcanoes form?,HotpotQA\n")
    citations = tmp_path / "citations.jsonl"
    citations.write_text(
        "".join(
            json.dumps({"system": "s", "query_id": "q1", "url": web.url(f"/page/{i}"), "rank": i + 1}) + "\n"
            for i in range(40)
        )
    )
    settings = [
        "scoring.top_k=null",
        "judge.signals.relevance=overlap",
        "report=null",
        "cluster.ray.num_cpus=2",
        "crawl.politeness.per_host_concurrency=2",
        "reduce.executor=local",
        "crawl.flush_every=5",  # progress counts committed parts: commit every 5 pages
    ]
    command = [
        *(sys.executable, "-m", "jobs.cli", "audit", "--run", str(tmp_path / "run")),
        *("--queries", str(queries), "--citations", str(citations), "--allowlist", "127.0.0.1"),
        *(arg for setting in settings for arg in ("--set", setting)),
    ]
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a 120-column terminal
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "disabled",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    }
    env.pop("RAY_ADDRESS", None)
    process = subprocess.Popen(command, stdout=follower, stderr=follower, cwd=REPO, env=env)
    os.close(follower)
    try:
        output = _read_pty(leader, process, timeout_s=400)
        assert process.wait(timeout=60) == 0, output[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
        web.stop()
    crawl = re.findall(r"\[crawl\][^\r\n]*?(\d+)/40[^\r\n]*pages/s", output)
    assert crawl and crawl[-1] == "40", output[-3000:]
    assert len(set(crawl)) > 2  # live: the count moved while the crawl ran
    assert re.search(r"\[judge\][^\r\n]*\d+/\d+ \[\d\d:\d\d<", output), output[-3000:]  # count, ETA
    assert "Started a local Ray instance" not in output  # Ray's INFO lines are off
