"""The spider of one shard: one request per canonical URL, exactly one page record per url_key."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections import Counter
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy_playwright.page import PageMethod
from twisted.python.failure import Failure

from crawler.config import CrawlConfig
from crawler.decoding import classify
from crawler.extract import extract_page
from crawler.fetch.downloader import HostTiming
from crawler.fetch.failures import LeftForLater, RedirectDeferred, failure_status
from crawler.fetch.sink import PartSink
from crawler.fetch.watchdog import StallWatchdog, die_with_parent
from crawler.records import page_record
from crawler.shards import ShardEntry, entry_host


def _content_type(response: Response) -> str | None:
    value = response.headers.get(b"Content-Type")
    return value.decode("latin-1") if value else None


class PageSpider(scrapy.Spider):
    """Fetch each entry once (with retries/redirects below), extract it, render it if the policy says so.

    Args:
        entries: The shard's URLs still to fetch.
        config: The crawl configuration.
        sink: Where page records and raw responses are committed.
        on_stall: What the shard process does once a stalled crawl's records are committed (it
            cannot close a wedged engine, so it reports and exits); gets the reason.

    At ``config.shard_timeout_s`` after it starts, the spider stops: nothing more is sent, what is in
    flight goes to its end and is committed, and the URLs not yet sent keep no record (``time_limited``),
    so the next process of the shard fetches them (``crawler.runner``).
    """

    name = "sourcebench-pages"

    def __init__(
        self,
        entries: list[ShardEntry],
        config: CrawlConfig,
        sink: PartSink,
        on_stall: Callable[[str], None],
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.entries, self.config, self.sink, self.on_stall = entries, config, sink, on_stall
        self.render_policy = "never" if config.replay_warcs else config.render.policy
        self.pool = (  # spawn: forking a process that runs an event loop and threads is unsafe
            ProcessPoolExecutor(
                config.extract_workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=die_with_parent,  # a shard process that exits takes its workers along
                initargs=(os.getpid(),),
            )
            if config.extract_workers
            else None
        )
        self.statuses: Counter[str] = Counter()
        self.own_hosts = {entry_host(entry) for entry in entries} - {""}
        """The hosts this shard holds: a redirect elsewhere is deferred (``RedirectLimitMiddleware``)."""
        self.requested: set[str] = set()
        self.timings: dict[str, HostTiming] = {}  # per host; the downloader's, once the crawl starts
        self.watchdog = StallWatchdog(lambda: len(self.sink.done), config.stall_timeout_s, self.stalled)
        self.time_limited = False
        self.left: set[str] = set()
        """url_keys whose request was stopped unsent at the time limit (``LeftForLater``)."""
        self.time_limit: asyncio.TimerHandle | None = None
        self.closing: asyncio.Future[None] | None = None  # the close the time limit began (kept: a task)

    # -- requests ----------------------------------------------------------------------------------
    async def start(self) -> AsyncIterator[Any]:
        self.watchdog.start()
        loop = asyncio.get_running_loop()
        self.time_limit = loop.call_later(self.config.shard_timeout_s, self.reach_time_limit)
        self.timings = getattr(self.crawler.engine.downloader, "timings", self.timings)
        for entry in self.entries:
            if entry.invalid:
                self.commit(entry, status="error", error=entry.invalid)
                continue
            self.requested.add(entry.url_key)
            meta: dict[str, Any] = {"entry": entry}
            if entry.via:  # a redirect an earlier round deferred: its hops count towards the limit
                meta |= {"redirect_urls": list(entry.via), "redirect_times": len(entry.via)}
            yield scrapy.Request(
                entry.target, callback=self.on_page, errback=self.on_failure, meta=meta, dont_filter=True
            )

    def render_request(self, response: Response, static: dict[str, Any]) -> scrapy.Request:
        return scrapy.Request(
            response.url,
            callback=self.on_render,
            errback=self.on_render_failure,
            dont_filter=True,
            meta={
                "entry": response.meta["entry"],
                "static": static,
                "dont_obey_robotstxt": True,
                "dont_retry": True,
                "playwright": True,  # DeadlinePlaywrightHandler names the context and bounds the render
                "playwright_context_kwargs": {"service_workers": "block", "ignore_https_errors": True},
                "playwright_page_goto_kwargs": {"wait_until": "load"},
                "playwright_page_methods": [PageMethod("wait_for_timeout", self.config.render.settle_ms)],
            },
        )

    # -- records -----------------------------------------------------------------------------------
    def commit(self, entry: ShardEntry, **fields: Any) -> None:
        record = page_record(entry.url, key=entry.url_key, original_urls=entry.original_urls, **fields)
        self.statuses[record["status"]] += 1
        self.sink.add(record)

    async def extract(self, url: str, body: bytes, content_type: str | None) -> dict[str, Any]:
        min_chars = self.config.limits.min_text_chars
        if self.pool is None:
            return extract_page(url, body, content_type, min_text_chars=min_chars)
        future = self.pool.submit(extract_page, url, body, content_type, min_text_chars=min_chars)
        return await asyncio.wrap_future(future)

    def wants_render(self, response: Response, content: dict[str, Any]) -> bool:
        if (
            self.render_policy == "never"
            or classify(_content_type(response), response.body, response.url) != "html"
        ):
            return False
        if self.render_policy == "always":
            return True
        return content["status"] in ("ok", "too_short") and (
            len((content.get("text_full") or "").strip()) < self.config.render.thin_text_chars
        )

    # -- callbacks ---------------------------------------------------------------------------------
    async def on_page(self, response: Response) -> AsyncIterator[Any]:
        entry: ShardEntry = response.meta["entry"]
        fetch = {
            "final_url": response.url,
            "redirect_chain": response.meta.get("redirect_urls", []),
            "http_status": response.status,
            "fetched_at": datetime.now(UTC),
        }
        if response.status >= 300:
            note = response.meta.get("retry_note")
            self.commit(entry, status="http_error", error=note or f"HTTP {response.status}", **fetch)
            return
        content = await self.extract(response.url, response.body, _content_type(response))
        if self.wants_render(response, content):
            yield self.render_request(response, {"fetch": fetch, "content": content})
            return
        self.commit(entry, status="ok", content=content, **fetch)

    async def on_render(self, response: Response) -> None:
        entry: ShardEntry = response.meta["entry"]
        static = response.meta["static"]
        self.sink.warc.write_response(response.url, 200, [], response.body, record_type="conversion")
        rendered = await self.extract(response.url, response.body, "text/html; charset=utf-8")
        static_text = len((static["content"].get("text_full") or "").strip())
        if rendered["status"] == "ok" or len((rendered.get("text_full") or "").strip()) > static_text:
            self.commit(entry, status="ok", content=rendered, rendered=True, **static["fetch"])
        else:
            self.commit(entry, status="ok", content=static["content"], **static["fetch"])

    def on_render_failure(self, failure: Failure) -> None:
        request = failure.request
        static = request.meta["static"]
        note = f"render failed ({failure.value}); static page kept"[:500]
        self.logger.warning("%s: %s", request.url, note)
        entry = request.meta["entry"]
        self.commit(entry, status="ok", error=note, content=static["content"], **static["fetch"])

    def on_failure(self, failure: Failure) -> None:
        request = failure.request
        if isinstance(failure.value, LeftForLater):  # no record: the shard's next process sends it
            self.left.add(request.meta["entry"].url_key)
            return
        if isinstance(failure.value, RedirectDeferred):
            self.sink.defer(request.meta["entry"].url_key, failure.value.target, failure.value.via)
            return
        status, message = failure_status(failure.value)
        self.commit(
            request.meta["entry"],
            status=status,
            error=message,
            redirect_chain=request.meta.get("redirect_urls", []),
            fetched_at=datetime.now(UTC),
        )

    # -- the end ------------------------------------------------------------------------------------
    def reach_time_limit(self) -> None:
        """``shard_timeout_s`` has passed: send nothing more and close once what is in flight ended."""
        self.time_limited = True
        self.logger.warning(
            "shard time limit (%g s) reached: %d URLs left for the next process",
            self.config.shard_timeout_s, len(self.entries) - len(self.sink.done),
        )  # fmt: skip
        engine = self.crawler.engine
        engine.downloader.stop_sending()
        self.closing = asyncio.ensure_future(engine.close_spider_async(reason="shard_time_limit"))

    def closed(self, reason: str) -> None:
        """Give every entry that got no record one (``error``), then commit the last part; after the
        time limit, commit what was fetched and leave the rest without a record."""
        self.watchdog.stop()
        if self.time_limit is not None:
            self.time_limit.cancel()
        ended = "error", f"no response before the crawl ended ({reason})"
        self.finish(lambda entry: None if self.time_limited else ended)

    def stalled(self, idle_s: float) -> None:
        """The watchdog saw no URL finish for ``idle_s``: end every open URL and hand over to ``on_stall``.

        A URL already requested ends as ``timeout``, one never requested as ``error``; after the time
        limit, a URL never sent keeps no record (the next process sends it).
        """
        reason = f"the shard stalled: no URL finished in {idle_s:.0f} s, so it was stopped"
        self.logger.error("%s (%d URLs open)", reason, len(self.entries) - len(self.sink.done))

        def ending(entry: ShardEntry) -> tuple[str, str] | None:
            sent = entry.url_key in self.requested and entry.url_key not in self.left
            if self.time_limited and not sent:
                return None
            return ("timeout" if sent else "error"), reason

        self.finish(ending, wait=False)
        self.on_stall(reason)

    def finish(self, ending: Callable[[ShardEntry], tuple[str, str] | None], wait: bool = True) -> None:
        """Commit a record for every entry still without one (status and error from ``ending``; None
        leaves it without one).

        ``wait=False`` does not wait for the extraction workers (one may be what is stuck).
        """
        for entry in self.entries:
            if entry.url_key not in self.sink.done and (end := ending(entry)) is not None:
                self.commit(entry, status=end[0], error=end[1])
        self.sink.close()
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)
