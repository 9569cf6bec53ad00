"""Shard processes, forked from a warmed-up zygote that each worker process keeps.

Starting a shard process from nothing costs about 2.5 s of CPU (imports, the extractor's models,
dateparser's patterns) and 1.5-2 s of wall time, and a host's shards run one after another
(``jobs.crawl``). The first ``ShardProcess`` of a worker process (a Ray worker, the CLI) starts its
zygote (``crawler.fetch.zygote``), which warms up once; every shard process after that is a fork of it,
ready at once, so neither a shard's CPU nor the host's idle time between two of its shards pays the
start again. A zygote that died is started again by the next ``ShardProcess``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


class ZygoteError(RuntimeError):
    """The zygote ended or broke its protocol (its log tail is in the message)."""


class Zygote:
    """One ``python -m crawler.fetch.zygote``: forks shard processes on request, reports their ends.

    Thread-safe: a lock guards its pipes, and a child's exit read while another is awaited is kept.
    """

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="sb-zygote-")
        self.log_path = os.path.join(self._folder.name, "zygote.log")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "crawler.fetch.zygote", str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
            )
        self._lock = threading.Lock()
        self._buffer = b""
        self._exits: dict[int, int] = {}
        self.ready: dict[str, float] | None = None
        """The zygote's warm-up timing, once it has said it is ready."""

    def alive(self) -> bool:
        return self._process.poll() is None

    def fork(self, spec_path: str, log_path: str) -> int:
        """A child crawling ``spec_path`` (output in ``log_path``) in this process's working directory
        and environment as they are now; its pid. Waits for the warm-up."""
        with self._lock:
            if self.ready is None:
                self.ready = self._next_message(None)["ready"]
            assert self._process.stdin is not None
            try:
                request = {"spec": spec_path, "log": log_path, "cwd": os.getcwd(), "env": dict(os.environ)}
                self._process.stdin.write(json.dumps(request).encode() + b"\n")
                self._process.stdin.flush()
            except BrokenPipeError as exc:
                raise ZygoteError(self._ended()) from exc
            while True:
                message = self._next_message(None)
                if "pid" in message:
                    return int(message["pid"])

    def wait(self, pid: int, timeout_s: float | None) -> int | None:
        """The exit code of child ``pid``, or None if it still runs after ``timeout_s``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            while pid not in self._exits:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._next_message(left)
            return self._exits.pop(pid)

    def _next_message(self, timeout_s: float | None) -> dict[str, Any]:
        """The next message (an exit is also recorded); ``{}`` when none came within ``timeout_s``."""
        assert self._process.stdout is not None
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._process.stdout], [], [], left)
            if not readable:
                return {}
            chunk = os.read(self._process.stdout.fileno(), 65536)
            if not chunk:
                raise ZygoteError(self._ended())
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        if "exited" in message:
            self._exits[int(message["exited"])] = int(message["code"])
        return message

    def _ended(self) -> str:
        self._process.kill()
        code = self._process.wait()
        with open(self.log_path, "rb") as log:
            tail = log.read()[-2000:].decode("utf-8", "replace")
        return f"the shard process zygote ended ({code}): {tail}"

    def close(self) -> None:
        """Kill the zygote (its children die with it) and close its pipes. Safe to call twice."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                pipe.close()
        self._folder.cleanup()


_ZYGOTE: Zygote | None = None
_ZYGOTE_LOCK = threading.Lock()


def zygote() -> Zygote:
    """This process's zygote, started (or started again, if it died) on first use."""
    global _ZYGOTE
    with _ZYGOTE_LOCK:
        if _ZYGOTE is None or not _ZYGOTE.alive():
            if _ZYGOTE is not None:
                _ZYGOTE.close()
            _ZYGOTE = Zygote()
        return _ZYGOTE


class ShardProcess:
    """One shard process, forked from this process's zygote by :meth:`run`.

    Creating one starts the zygote if there is none. The process dies with the zygote
    (``PR_SET_PDEATHSIG``), which ends when the process that started it does (its stdin closes), so a
    killed Ray worker leaves neither behind. Its output goes to a log of its own.
    """

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="sb-shard-process-")
        self.log_path = os.path.join(self._folder.name, "scrapy.log")
        Path(self.log_path).touch()
        self._zygote = zygote()
        self.pid: int | None = None
        self.exit_code: int | None = None

    def run(self, spec_path: str, timeout_s: float) -> int | str:
        """Fork the process for the spec and wait for it: its exit code, or why it was stopped.

        ``timeout_s`` counts from the fork, not from the zygote's warm-up.
        """
        if self.pid is not None:
            raise RuntimeError("a shard process runs one spec")
        try:
            self.pid = self._zygote.fork(spec_path, self.log_path)
            code = self._zygote.wait(self.pid, timeout_s)
            if code is None:
                self._kill()
                return f"timeout after {timeout_s:.0f}s"
        except ZygoteError as exc:
            return str(exc)
        self.exit_code = code
        return code

    def _kill(self) -> None:
        assert self.pid is not None
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.exit_code = self._zygote.wait(self.pid, None)

    def running(self) -> bool:
        """Whether the process was forked and has not ended."""
        return self.pid is not None and self.exit_code is None

    def log_tail(self, size: int = 2000) -> str:
        """The end of what the process wrote."""
        with open(self.log_path, "rb") as log:
            log.seek(max(0, os.path.getsize(self.log_path) - size))
            return log.read().decode("utf-8", "replace")

    def close(self) -> None:
        """Kill the process if it still runs and remove its log. Safe to call twice."""
        if self.running():
            try:
                self._kill()
            except ZygoteError:
                pass
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
