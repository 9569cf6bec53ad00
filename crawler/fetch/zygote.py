"""A warmed-up process that forks shard processes: ``python -m crawler.fetch.zygote PARENT_PID``.

A shard process started from nothing spends about 2.5 s of CPU before its crawl is up to speed:
importing Scrapy and the extractor, loading the language model, and dateparser compiling the
patterns of its ~230 locales on the first string that reaches it. At 500 URLs a shard that was 12 %
of a crawl's CPU. The zygote pays it once per worker process (a Ray worker runs chain after chain), and
each shard process is a ``fork`` of it: the child starts with every import done and every pattern
compiled, shared copy-on-write, and its own CPU accounting starting at zero.

The zygote stays single-threaded and installs no Twisted reactor or event loop (a fork copies only the
calling thread, and each child installs its own reactor). It ends with its parent (its stdin closes),
each child with the zygote (``PR_SET_PDEATHSIG``), so a killed Ray worker leaves no process behind.

Protocol, one JSON object per line. Stdin: ``{"spec": path, "log": path, "cwd": path, "env": {...}}``
asks for a child that crawls the spec with its output in the log, in the working directory and
environment of the process that asks (which may have changed since the zygote started: a run path
relative to it, S3 credentials set later; what the zygote's imports read from the environment
stays). Stdout: ``{"ready": timing}`` once warm, then ``{"pid": n}`` for each request in order, and
``{"exited": n, "code": c}`` when a child ends. Closed stdin ends it.
"""

from __future__ import annotations

import json
import os
import selectors
import sys
import time
import traceback
from typing import Any

from crawler.fetch.process import crawl_shard, warm_up
from crawler.fetch.watchdog import die_with_parent
from crawler.stagetimes import cpu_seconds


def _say(message: dict[str, Any]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def _child(request: dict[str, Any], timing: dict[str, float]) -> None:
    """Run in a forked child: crawl the spec with stdout and stderr in the log, then exit."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        die_with_parent(os.getppid())
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        code = crawl_shard(request["spec"], timing)
    except BaseException:  # noqa: BLE001 - the log is where the reason goes; the exit code says it failed
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(parent_pid: int) -> int:
    """Warm up, then fork a child per request until stdin closes or the parent is gone.

    Not ``PR_SET_PDEATHSIG`` here: it fires when the *thread* that started the zygote ends, and the
    zygote outlives the task that started it. The parent's end closes stdin (or re-parents the zygote).
    """
    started = time.monotonic()
    warm_up()
    ready, warm_up_cpu = time.monotonic(), cpu_seconds()
    _say({"ready": {"warm_up_s": round(ready - started, 3), "warm_up_cpu_s": round(warm_up_cpu, 3)}})
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ)
    pending, children, forked = b"", 0, 0
    while os.getppid() == parent_pid:
        if selector.select(timeout=0.05):
            chunk = os.read(0, 65536)
            if not chunk:
                return 0
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                first = forked == 0  # the warm-up's cost goes into its first child's report, once
                timing = {
                    "warm_up_s": round(ready - started, 3) if first else 0.0,
                    "warm_up_cpu_s": round(warm_up_cpu, 3) if first else 0.0,
                    "forked": forked + 1,
                }
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(request, timing)
                forked, children = forked + 1, children + 1
                _say({"pid": pid})
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            children -= 1
            _say({"exited": pid, "code": os.waitstatus_to_exitcode(status)})
    return 0


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1])))
