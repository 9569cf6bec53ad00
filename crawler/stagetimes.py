"""CPU time per extraction stage, for the benchmark and profiling (``extract_page(..., times=...)``)."""

from __future__ import annotations

import collections
import time


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
