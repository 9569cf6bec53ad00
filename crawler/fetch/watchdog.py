"""The last line of defence of a shard process: end a crawl that stopped making progress.

Every request has its own bound (download timeout, retry limits, render deadline), but a crawl
can still wedge on something no single bound covers (a browser that stops answering, a lock in a
library). The watchdog watches how many URLs have a committed record; when that number has not
moved for ``stall_timeout_s`` it calls ``on_stall`` once. A wedged Scrapy engine cannot close
itself gracefully (closing waits for the stuck request), so the shard process answers by writing
the missing records, committing them and exiting.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import time
from collections.abc import Callable


class StallWatchdog:
    """Calls ``on_stall(idle_s)`` once ``progress()`` has not changed for ``stall_timeout_s``.

    Args:
        progress: A count that grows as the crawl works (URLs with a record).
        stall_timeout_s: Seconds without progress that count as a stall.
        on_stall: Called once, on the event loop, with the seconds since the last progress.
    """

    def __init__(
        self, progress: Callable[[], int], stall_timeout_s: float, on_stall: Callable[[float], None]
    ):
        self.progress, self.stall_timeout_s, self.on_stall = progress, stall_timeout_s, on_stall
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _watch(self) -> None:
        last, since = self.progress(), time.monotonic()
        while True:
            await asyncio.sleep(min(1.0, self.stall_timeout_s / 4))
            now, current = time.monotonic(), self.progress()
            if current != last:
                last, since = current, now
            elif now - since >= self.stall_timeout_s:
                self.on_stall(now - since)
                return


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when its parent exits; exit now if it already has."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() != parent_pid:
        os._exit(1)
