"""Scrapy's downloader with per-host limits that hold, a Crawl-delay floor, and per-host timing.

Scrapy 2.19 on the asyncio reactor does not keep ``CONCURRENT_REQUESTS_PER_DOMAIN``: its
``Downloader._process_queue`` pops queued requests ``while slot.free_transfer_slots() > 0`` and
schedules each download as an asyncio *task*; the task only adds its request to
``slot.transferring`` once the loop runs it, so the loop pops the whole queue in one go (a loopback
server saw 14-60 requests at once on one host with a limit of 2). ``HostSlotDownloader`` reserves the
transfer slot before the task is scheduled, so a host never has more than its concurrency in flight.

A host's shards run one after another, each in a process of its own (``jobs.crawl``), and a later
redirect round may crawl the host again. Each process starts with what the one before it left
(``crawler.shards.HostPacing``): the host's first request then waits for the delay since the previous
process's last one, instead of coming one process start (~2 s) after it, under a longer ``Crawl-delay``;
and with AutoThrottle on, the host starts at the delay AutoThrottle had learned from its latency, not at
``AUTOTHROTTLE_START_DELAY`` again (a slow host would get requests that fast until its first response).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from time import monotonic, time
from typing import Any

from scrapy.core.downloader import Downloader, Slot
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import _schedule_coro
from twisted.python.failure import Failure

from crawler.fetch.failures import LeftForLater
from crawler.shards import HostPacing
from crawler.storage import RunStore

#: The Scrapy setting that carries the ``HostPacing`` of the shard's hosts into its process.
PACING_SETTING = "SOURCEBENCH_HOST_PACING"
#: The Scrapy setting saying where the downloader checkpoints its hosts' timing (``PacingCheckpoint``), so
#: that a process that dies without a report, or whose node is lost, leaves its hosts' pacing to a retry.
CHECKPOINT_SETTING = "SOURCEBENCH_PACING_CHECKPOINT"
#: Least seconds between two checkpoints, those of a new Crawl-delay included: a shard of many hosts reads
#: many robots.txt files at once, and one blocking write (an S3 PUT) each would stall the downloader.
CHECKPOINT_MIN_S = 1.0


@dataclass
class HostTiming:
    """How long one host kept a shard busy, and when it was last sent a request.

    Attributes:
        requests: Requests sent to the host (robots.txt, retries and redirect hops included).
        first_s: Monotonic time its first request was sent.
        last_s: Monotonic time its last response (or failure) arrived.
        last_sent_at: Epoch seconds its last request was sent.
        crawl_delay_s: Its robots.txt ``Crawl-delay`` as honoured (None: none).
        delay_s: Its slot's delay when its last response came (None: no response yet).
    """

    requests: int = 0
    first_s: float = 0.0
    last_s: float = 0.0
    last_sent_at: float = 0.0
    crawl_delay_s: float | None = None
    delay_s: float | None = None

    @property
    def active_s(self) -> float:
        """Seconds from the host's first request to its last response in this shard."""
        return max(0.0, self.last_s - self.first_s)

    def pacing(self) -> HostPacing:
        return {
            "last_sent_at": round(self.last_sent_at, 3),
            "crawl_delay_s": self.crawl_delay_s,
            "delay_s": None if self.delay_s is None else round(self.delay_s, 3),
        }


def host_report(timings: Mapping[str, HostTiming]) -> dict[str, dict[str, Any]]:
    """Per host: requests sent, seconds active and its pacing (a shard report's ``hosts``)."""
    return {
        host: {"requests": timing.requests, "active_s": round(timing.active_s, 3), **timing.pacing()}
        for host, timing in timings.items()
    }


@dataclass(frozen=True)
class PacingCheckpoint:
    """Where and how often a shard process writes its hosts' timing into the run.

    The file (``{"written_at": epoch seconds, "hosts": host_report}``) sits in the run store, not on the
    node: a Ray task retried on another node after this one is lost reads it too (``crawler.runner``).

    Attributes:
        run_uri: The run the shard belongs to.
        path: The file inside the run (``LAYOUT.crawl_pacing``).
        every_s: Seconds between two writes; a Crawl-delay read from robots.txt is written at once.
    """

    run_uri: str
    path: str
    every_s: float

    def write(self, timings: Mapping[str, HostTiming]) -> None:
        RunStore(self.run_uri).write_json(
            self.path, {"written_at": round(time(), 3), "hosts": host_report(timings)}
        )


class HostSlotDownloader(Downloader):
    """``DOWNLOADER`` of a shard: per-host concurrency and delay as configured, plus Crawl-delay.

    ``min_delays`` holds per-host delay floors (robots.txt ``Crawl-delay``): the slot's delay never
    drops below it, whatever AutoThrottle decides. The ``PACING_SETTING`` of earlier processes sets
    those floors from the start (robots.txt is a request too), when each host was last sent one and,
    with AutoThrottle on, the delay each host's slot starts at.
    """

    def __init__(self, crawler: Any):
        super().__init__(crawler)
        self.min_delays: dict[str, float] = {}
        self.timings: dict[str, HostTiming] = {}
        self._last_sent: dict[str, float] = {}  # host -> monotonic time an earlier process last sent
        self._learned: dict[str, float] = {}  # host -> the delay a new slot starts at (AutoThrottle on)
        settings = crawler.settings
        self._throttled = settings.getbool("AUTOTHROTTLE_ENABLED")
        self._delay_bounds = settings.getfloat("DOWNLOAD_DELAY"), settings.getfloat("AUTOTHROTTLE_MAX_DELAY")
        self._checkpoint: PacingCheckpoint | None = None  # set after the pacing below, which the parent has
        self._checkpointed = 0.0
        self._urgent: CallLaterResult | None = None  # the write of a new Crawl-delay, when scheduled
        self._stopped = False  # stop_sending() was called
        pacing: dict[str, HostPacing] = settings.getdict(PACING_SETTING)
        for host, paced in pacing.items():
            self._last_sent[host] = monotonic() - max(0.0, time() - paced["last_sent_at"])
            if paced["crawl_delay_s"]:
                self.set_min_delay(host, paced["crawl_delay_s"])
            if self._throttled and paced.get("delay_s") is not None:
                self._learned[host] = paced["delay_s"]
        checkpoint = settings.getdict(CHECKPOINT_SETTING)
        self._checkpoint = PacingCheckpoint(**checkpoint) if checkpoint else None

    def set_min_delay(self, host: str, seconds: float) -> None:
        """Never send two requests to ``host`` less than ``seconds`` apart (from now on, no jitter)."""
        self.min_delays[host] = max(seconds, self.min_delays.get(host, 0.0))
        self.timings.setdefault(host, HostTiming()).crawl_delay_s = self.min_delays[host]
        if host in self.slots:
            self._apply_floor(self.slots[host], self.min_delays[host])
        self._write_checkpoint(force=True)

    def _write_checkpoint(self, force: bool = False) -> None:
        """Checkpoint the hosts so far (atomically): every ``every_s``, or ``CHECKPOINT_MIN_S`` after the
        last write when ``force`` (a new Crawl-delay), a call scheduled for then if it is sooner."""
        if self._checkpoint is None:
            return
        since = monotonic() - self._checkpointed
        if force and since < CHECKPOINT_MIN_S:
            if self._urgent is None:
                self._urgent = call_later(CHECKPOINT_MIN_S - since, self._write_now)
        elif force or since >= self._checkpoint.every_s:
            self._write_now()

    def _write_now(self) -> None:
        if self._checkpoint is None:
            return
        if self._urgent is not None:  # written now, Crawl-delay included (cancelling a call made: a no-op)
            self._urgent.cancel()
            self._urgent = None
        self._checkpointed = monotonic()
        self._checkpoint.write(self.timings)

    def _get_slot(self, request: Any, spider: Any = None) -> tuple[str, Slot]:
        key, slot = super()._get_slot(request)
        if not slot.lastseen:  # a new slot (nothing sent yet): start where the host was left
            if key in self._learned:  # AutoThrottle's own bounds, as it would have kept it
                low, high = self._delay_bounds
                slot.delay = min(max(low, self._learned[key]), high)
            if key in self._last_sent:  # the delay runs from the earlier process's last request
                slot.lastseen = self._last_sent[key]
        if key in self.min_delays:
            self._apply_floor(slot, self.min_delays[key])
        return key, slot

    @staticmethod
    def _apply_floor(slot: Slot, floor: float) -> None:
        slot.delay, slot.jitter = max(slot.delay, floor), 0.0  # jitter would go below the floor

    def stop_sending(self) -> None:
        """Send nothing more: every request waiting for its host's turn, and every one that comes later,
        fails with ``LeftForLater``; those in transfer go on to their end."""
        self._stopped = True
        for slot in self.slots.values():
            if slot.latercall:
                slot.latercall.cancel()
                slot.latercall = None
            self._process_queue(slot)

    def _process_queue(self, slot: Slot) -> None:
        if self._stopped:
            while slot.queue:
                _request, queue_dfd = slot.queue.popleft()
                queue_dfd.errback(Failure(LeftForLater()))
            return
        if slot.latercall:
            return
        now = monotonic()
        delay = slot.download_delay()
        if delay:
            penalty = delay - now + slot.lastseen
            if penalty > 0:
                slot.latercall = call_later(penalty, self._latercall, slot)
                return
        while slot.queue and slot.free_transfer_slots() > 0:
            slot.lastseen = now
            request, queue_dfd = slot.queue.popleft()
            slot.transferring.add(request)  # reserve now: the task below starts on a later loop turn
            self._time(request, now, sent=True)
            _schedule_coro(self._timed_download(slot, request, queue_dfd))
            if delay:  # one request per delay: the next waits for its own turn
                self._process_queue(slot)
                break

    async def _timed_download(self, slot: Slot, request: Any, queue_dfd: Any) -> None:
        try:
            await self._wait_for_download(slot, request, queue_dfd)
        finally:
            self._time(request, monotonic(), sent=False)

    def _time(self, request: Any, now: float, sent: bool) -> None:
        key = request.meta.get(self.DOWNLOAD_SLOT, "")
        timing = self.timings.setdefault(key, HostTiming())
        if sent:
            timing.requests += 1
            timing.first_s = timing.first_s or now
            timing.last_sent_at = time()
        else:
            timing.last_s = now
            if key in self.slots:  # after AutoThrottle's adjustment (response_downloaded came first)
                timing.delay_s = self.slots[key].delay
                if self._throttled:  # a slot Scrapy recycles when idle comes back at this delay
                    self._learned[key] = timing.delay_s
        self._write_checkpoint()
