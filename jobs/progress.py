"""Live progress of long stages: count, rate and ETA, read from what the stage has committed.

A :class:`StageProgress` polls a counter in a background thread. The counters read the run store
(row counts from Parquet footers), so they see the work of every Ray task and subprocess, not just
this process. On a terminal each stage is one tqdm line that redraws in place; elsewhere (a log
file, ``ray job submit``'s job log) the same numbers are printed as a plain line every
``log_every_s`` seconds and once at the end, so a job log shows progress without bar noise.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from crawler.base import RunStore
from crawler.layout import LAYOUT

#: Statuses of a judgment that is done (an ``error`` row is retried, so it is not).
_DONE_JUDGMENTS = ("scored", "unscorable", "skipped")
_active: list[StageProgress] = []
_lock = threading.Lock()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _width(stream: IO[str]) -> dict[str, Any]:
    """Follow the terminal's size, or 100 x 24 where it reports none (a fresh pseudo-terminal reports
    0 x 0, and tqdm hides every bar below the last of 0 rows)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        size = os.terminal_size((0, 0))
    return {"dynamic_ncols": True} if size.columns and size.lines else {"ncols": 100, "nrows": 24}


def progress_line(name: str, done: int, total: int | None, unit: str, elapsed: float, start: int) -> str:
    """``[crawl] 120/500 pages (24 %), 3.2 pages/s, ETA 1m58s`` (the plain-log form)."""
    rate = (done - start) / elapsed if elapsed > 0 else 0.0
    head = f"[{name}] {done:,}/{total:,} {unit}" if total else f"[{name}] {done:,} {unit}"
    if total:
        head += f" ({100.0 * done / total:.0f} %)"
    line = f"{head}, {rate:.1f} {unit}/s"
    if total and rate > 0 and done < total:
        line += f", ETA {_duration((total - done) / rate)}"
    return line


class StageProgress:
    """Count, rate and ETA of one stage, polled from ``count`` every ``interval_s`` seconds.

    Args:
        name: The stage, shown as ``[name]``.
        count: Units done so far (called from the polling thread).
        total: Units the stage will have done at the end, or None while unknown (called each poll).
        unit: What is counted (``pages``, ``judgments``).
        stream: Where to write; a terminal gets a tqdm bar, anything else plain lines.
        interval_s: Seconds between polls.
        log_every_s: Seconds between plain lines when ``stream`` is not a terminal.
    """

    def __init__(
        self,
        name: str,
        count: Callable[[], int],
        total: Callable[[], int | None],
        unit: str,
        stream: IO[str] | None = None,
        interval_s: float = 1.0,
        log_every_s: float = 30.0,
    ):
        self.name, self.count, self.total, self.unit = name, count, total, unit
        self.stream = stream or sys.stderr
        self.interval_s, self.log_every_s = interval_s, log_every_s
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._start_count = 0
        self._started = 0.0

    def __enter__(self) -> StageProgress:
        self._started = time.monotonic()
        self._start_count = self._safe_count()
        if self.tty:
            from tqdm import tqdm

            with _lock:
                position = len(_active)
                _active.append(self)
            self._bar = tqdm(
                desc=f"[{self.name}]",
                total=self.total(),
                initial=self._start_count,
                unit=f" {self.unit}",
                file=self.stream,
                position=position,
                leave=True,
                **_width(self.stream),
            )
        self._thread = threading.Thread(target=self._poll, name=f"progress-{self.name}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, failure: type[BaseException] | None, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._update()
        if self._bar is not None:
            self._bar.close()
            with _lock:
                _active.remove(self)
        elif failure is None:  # a failed stage says why in one line of its own
            self._write()

    def _safe_count(self) -> int:
        try:
            return self.count()
        except (OSError, ValueError):  # a part replaced while it was read: count it next time
            return self._bar.n if self._bar is not None else self._start_count

    def _update(self) -> tuple[int, int | None]:
        done, total = self._safe_count(), self.total()
        if total is not None:
            total = max(total, done)
        if self._bar is not None:
            if total != self._bar.total:
                self._bar.total = total
            self._bar.update(done - self._bar.n)
        return done, total

    def _write(self) -> None:
        done, total = self._update()
        elapsed = time.monotonic() - self._started
        line = progress_line(self.name, done, total, self.unit, elapsed, self._start_count)
        self.stream.write(f"{line}\n")
        self.stream.flush()

    def _poll(self) -> None:
        last_line = time.monotonic()
        while not self._stop.wait(self.interval_s):
            if self.tty:
                self._update()
            elif time.monotonic() - last_line >= self.log_every_s:
                self._write()
                last_line = time.monotonic()


class PartRows:
    """Rows committed under a run folder, summed from Parquet footers (cached per part name and size)."""

    def __init__(self, store: RunStore, folder: str):
        self.store, self.folder = store, folder
        self._rows: dict[tuple[str, int], int] = {}

    def parts(self) -> list[pafs.FileInfo]:
        selector = pafs.FileSelector(self.store.path(self.folder), allow_not_found=True)
        return [
            info
            for info in self.store.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
            and info.base_name.endswith(".parquet")
            and not info.base_name.startswith((".", "_tmp"))
        ]

    def __call__(self) -> int:
        total = 0
        for info in self.parts():
            key = (info.path, info.size or 0)
            if key not in self._rows:
                self._rows[key] = pq.read_metadata(info.path, filesystem=self.store.fs).num_rows
            total += self._rows[key]
        return total


def crawl_progress(store: RunStore, total: int | None = None, **options: Any) -> StageProgress:
    """Pages committed by a crawl; the total is the crawl plan's URL count unless given."""

    def planned() -> int | None:
        if total is not None:
            return total
        return (store.read_json_if_present(LAYOUT.crawl_manifest) or {}).get("urls")

    return StageProgress("crawl", PartRows(store, LAYOUT.pages), planned, "pages", **options)


def judge_progress(
    store: RunStore, stage_requests: Callable[[], int], refresh_s: float = 10.0, **options: Any
) -> StageProgress:
    """Stage judgments of a judge pass: those done when it starts plus the rows it commits.

    ``stage_requests`` says what the pass asks for (page x query x 3 stages); it grows while a
    streaming crawl commits pages, so it is asked again every ``refresh_s`` seconds. Judgments the run
    already holds count as done at the start; after a judge change they are judged again, so the
    count can pass the total, which then grows with it.
    """
    rows = PartRows(store, LAYOUT.judgments)
    before = rows()
    asked = {"total": stage_requests(), "at": time.monotonic()}
    done_before = min(_done_judgments(store), asked["total"])

    def count() -> int:
        return done_before + rows() - before

    def total() -> int:
        if time.monotonic() - asked["at"] >= refresh_s:
            asked.update(total=stage_requests(), at=time.monotonic())
        return asked["total"]

    return StageProgress("judge", count, total, "judgments", **options)


def _done_judgments(store: RunStore) -> int:
    if not store.exists(LAYOUT.judgments):
        return 0
    done = 0
    for name in store.listdir(LAYOUT.judgments, suffix=".parquet"):
        status = store.read_part(f"{LAYOUT.judgments}/{name}", ["status"])
        done += (
            pc.sum(pc.is_in(status["status"], value_set=pa.array(_DONE_JUDGMENTS, pa.string()))).as_py() or 0
        )
    return done
