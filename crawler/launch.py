"""A shard's Scrapy subprocess, which can be started before its shard is known.

Starting one costs a few seconds of imports and warm-up (Scrapy, the extractor's models), and a host's
shards run one after another (``jobs.crawl``), so every boundary between two of them used to leave the
host idle that long. A chain therefore starts the next shard's process while the current shard crawls:
the process warms up, then waits for the path of its spec on stdin; its crawl begins when it gets it,
with the pacing the shard before it left.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

REPO_ROOT = Path(__file__).resolve().parents[1]


class ShardProcess:
    """One ``python -m crawler.fetch.process``, started now, given its spec by :meth:`run`.

    It dies with the process that started it (``PR_SET_PDEATHSIG``), so a killed Ray worker leaves
    neither a crawling nor a waiting one behind. Its output goes to a log of its own.
    """

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="sb-shard-process-")
        self.log_path = os.path.join(self._folder.name, "scrapy.log")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "crawler.fetch.process", str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        self._given = False

    def run(self, spec_path: str, timeout_s: float) -> int | str:
        """Hand the process its spec and wait for it: its exit code, or why it was stopped.

        ``timeout_s`` counts from now, not from the start of a process started ahead.
        """
        if self._given:
            raise RuntimeError("a shard process runs one spec")
        self._given = True
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(spec_path.encode() + b"\n")
            stdin.close()
        except BrokenPipeError:  # it died while warming up; its exit code says how
            pass
        try:
            return self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            return f"timeout after {timeout_s:.0f}s"

    def log_tail(self, size: int = 2000) -> str:
        """The end of what the process wrote."""
        with open(self.log_path, "rb") as log:
            log.seek(max(0, os.path.getsize(self.log_path) - size))
            return log.read().decode("utf-8", "replace")

    def close(self) -> None:
        """Kill the process if it still runs (one never given a spec has done nothing) and remove its
        log. Safe to call twice."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._folder.cleanup()

    def __enter__(self) -> ShardProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
