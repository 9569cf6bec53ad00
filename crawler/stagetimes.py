"""CPU time: per extraction stage (``extract_page(..., times=...)``, for the benchmark and profiling),
and of a whole process with the children it waited for."""

from __future__ import annotations

import collections
import resource
import time


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of the children it has waited for (and theirs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class StageTimes:
    """CPU seconds (``time.process_time``) spent in each named stage, summed over the pages extracted.

    The extractor calls ``start()`` when a page begins and ``lap(stage)`` when a stage ends; the time
    since the previous call is added to that stage. Process time, not wall time: on a shared machine
    the other processes' load does not count (it still slows the caches, so compare in one run).
    """

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.pages = 0
        self._last = time.process_time()

    def start(self) -> None:
        self.pages += 1
        self._last = time.process_time()

    def lap(self, stage: str) -> None:
        now = time.process_time()
        self.seconds[stage] += now - self._last
        self._last = now


class _NoTimes(StageTimes):
    """What the extractor uses when nobody asked for times: no clock read."""

    def start(self) -> None:
        pass

    def lap(self, stage: str) -> None:
        pass


NO_TIMES = _NoTimes()
