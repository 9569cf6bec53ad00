"""Downloader middlewares: SSRF guard, robots.txt, retries with backoff, size cap, redirect limit, WARC.

Each turns its failure into a ``FetchFailure`` carrying the page status, so that the spider never
has to guess a status from an exception message.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.resolver import CachingThreadedResolver

from crawler.config import CrawlConfig
from crawler.fetch.failures import FetchFailure, RedirectDeferred, is_transient
from crawler.netguard import AddressPolicy, BlockedAddress, is_ip_literal
from crawler.retry import retry_after
from crawler.urls import strip_credentials

CONFIG_SETTING = "SOURCEBENCH_CRAWL_CONFIG"


def crawl_config(crawler: Crawler) -> CrawlConfig:
    """The CrawlConfig a shard process put into its Scrapy settings."""
    return CrawlConfig.model_validate(crawler.settings.get(CONFIG_SETTING) or {})


class AddressGuardMiddleware:
    """Refuse a request, before any connection, when its host is or resolves to a refused address.

    Runs on every request, so every redirect hop and the robots.txt request are checked too. A URL
    longer than ``limits.max_url_chars`` ends as ``error`` (Scrapy's own URL length check would drop
    it silently); ``user:password@`` credentials (a redirect may carry them) are stripped, never sent.
    """

    def __init__(self, policy: AddressPolicy, max_url_chars: int):
        self.policy, self.max_url_chars = policy, max_url_chars
        self._verdicts: dict[str, str | None] = {}  # host -> refusal reason (None = allowed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AddressGuardMiddleware:
        config = crawl_config(crawler)
        if config.replay_warcs:
            raise NotConfigured("replay makes no connections")
        return cls(config.network.address_policy(), config.limits.max_url_chars)

    async def verdict(self, host: str, port: int) -> str | None:
        if host not in self._verdicts:
            if is_ip_literal(host):
                addresses = [host.strip("[]")]
            else:
                loop = asyncio.get_running_loop()
                try:
                    infos = await loop.getaddrinfo(host, port, type=0)
                    addresses = sorted({info[4][0] for info in infos})
                except OSError:
                    addresses = []
            try:
                self.policy.check_addresses(host, addresses)
                self._verdicts[host] = None
            except BlockedAddress as exc:
                self._verdicts[host] = str(exc)
        return self._verdicts[host]

    async def process_request(self, request: Request) -> Request | None:
        if len(request.url) > self.max_url_chars:
            raise FetchFailure(
                "error",
                f"URL too long: {len(request.url)} characters, over limits.max_url_chars "
                f"({self.max_url_chars}); not fetched",
            )
        parts = urlsplit(request.url)
        if "@" in parts.netloc:
            return request.replace(url=strip_credentials(request.url))
        if parts.scheme not in ("http", "https"):
            raise FetchFailure("blocked_address", f"scheme {parts.scheme!r} is not fetched")
        reason = await self.verdict(
            parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
        )
        if reason:
            status = "blocked_address" if "did not resolve" not in reason else "error"
            raise FetchFailure(status, reason)
        return None


class GuardedResolver(CachingThreadedResolver):
    """Scrapy's DNS resolver, re-checking the address it hands to the connection (DNS rebinding)."""

    policy = AddressPolicy()

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: Any) -> GuardedResolver:
        resolver = super().from_crawler(crawler, reactor)
        resolver.policy = crawl_config(crawler).network.address_policy()
        return resolver

    def getHostByName(self, name: str, timeout: Any = ()) -> Any:  # noqa: N802 (Twisted API)
        deferred = super().getHostByName(name, timeout)

        def check(address: str) -> str:
            self.policy.check_addresses(name, [address])
            return address

        return deferred.addCallback(check)


class PageRobotsMiddleware(RobotsTxtMiddleware):
    """robots.txt (Protego) with disallowed URLs ending as ``robots_disallowed``.

    Requests to one host that arrive while its robots.txt is being fetched share one asyncio task:
    Scrapy's own middleware hands them a Deferred whose result is consumed by the first waiter
    (``Deferred.asFuture``), so every other one saw "no robots.txt" and was let through.
    """

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._crawl_delays: dict[str, float | None] = {}  # host -> robots.txt Crawl-delay (None: none)
        self.max_crawl_delay_s = crawl_config(crawler).politeness.max_crawl_delay_s

    async def robot_parser(self, request: Request) -> Any:
        netloc = urlsplit(request.url).netloc
        if netloc not in self._pending:
            self._pending[netloc] = asyncio.ensure_future(super().robot_parser(request))
        return await self._pending[netloc]

    def process_request_2(self, rp: Any, request: Request) -> None:
        try:
            super().process_request_2(rp, request)
        except IgnoreRequest as exc:
            raise FetchFailure("robots_disallowed", "disallowed by robots.txt") from exc
        if rp is not None:
            self.honour_crawl_delay(rp, request)

    def honour_crawl_delay(self, rp: Any, request: Request) -> None:
        """Apply the host's ``Crawl-delay`` as a floor of its downloader slot's delay.

        The floor is exact (no jitter, AutoThrottle does not lower it). A host asking for more than
        ``politeness.max_crawl_delay_s`` is not crawled: its URLs end as ``robots_disallowed``.
        """
        host = urlsplit(request.url).hostname or ""
        if host not in self._crawl_delays:
            self._crawl_delays[host] = rp.crawl_delay(self._robotstxt_useragent or self._default_useragent)
            if self._crawl_delays[host] and self._crawl_delays[host] <= self.max_crawl_delay_s:
                self.crawler.engine.downloader.set_min_delay(host, self._crawl_delays[host])
        delay = self._crawl_delays[host]
        if not delay:
            return
        if delay > self.max_crawl_delay_s:
            raise FetchFailure(
                "robots_disallowed",
                f"robots.txt asks for Crawl-delay {delay:g} s, over politeness.max_crawl_delay_s "
                f"({self.max_crawl_delay_s:g} s)",
            )
        request.meta["autothrottle_dont_adjust_delay"] = True


class SizeCapCompressionMiddleware(HttpCompressionMiddleware):
    """Decompression with the size cap: a body over the cap after decompression ends as ``too_large``."""

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        try:
            return super().process_response(request, response)
        except IgnoreRequest as exc:
            raise FetchFailure("too_large", str(exc)) from exc


class RedirectLimitMiddleware(RedirectMiddleware):
    """Redirects (every hop re-checked by the guard); more than the limit ends as ``error``.

    A page's redirect to a host that the shard does not hold is not followed when
    ``politeness.cross_host_redirects`` is ``defer``: that host may be another shard's, crawled at its
    limit right now, or a host many shards are redirected to at once. The target is left to the next
    round (``RedirectDeferred``), whose shards are packed by host like the cited URLs.
    """

    defer: bool = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectLimitMiddleware:
        middleware = super().from_crawler(crawler)
        middleware.defer = crawl_config(crawler).politeness.cross_host_redirects == "defer"
        return middleware

    def _redirect(self, redirected: Request, request: Request, reason: Any) -> Request:
        try:
            followed = super()._redirect(redirected, request, reason)
        except IgnoreRequest as exc:
            raise FetchFailure("error", f"more than {self.max_redirect_times} redirects") from exc
        if (
            self.defer
            and "entry" in request.meta  # a page, not robots.txt
            and urlsplit(followed.url).hostname not in self.crawler.spider.own_hosts
        ):
            raise RedirectDeferred(strip_credentials(followed.url), followed.meta["redirect_urls"])
        return followed


class BackoffRetryMiddleware:
    """Retries with exponential backoff for transient failures; 429/503 honour ``Retry-After``.

    A Retry-After longer than ``max_retry_after_s`` is not waited for: the URL ends as http_error
    with the reason, instead of stalling a shard for an hour.
    """

    RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524})

    def __init__(self, config: CrawlConfig):
        self.limits = config.limits

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BackoffRetryMiddleware:
        return cls(crawl_config(crawler))

    def _next(self, request: Request) -> Request:
        retry = request.copy()
        retry.meta["retry_attempt"] = request.meta.get("retry_attempt", 0) + 1
        retry.dont_filter = True
        return retry

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        attempt = request.meta.get("retry_attempt", 0)
        if response.status not in self.RETRY_STATUSES or request.meta.get("dont_retry"):
            return response
        if attempt >= self.limits.retries:
            request.meta["retry_note"] = f"HTTP {response.status} after {attempt + 1} attempts"
            return response
        delay = self.limits.backoff_base_s * 2**attempt
        if response.status in (429, 503):
            wait = retry_after(response.headers.get(b"Retry-After"))
            if wait is not None and wait > self.limits.max_retry_after_s:
                request.meta["retry_note"] = (
                    f"Retry-After {wait:.0f}s exceeds {self.limits.max_retry_after_s:.0f}s"
                )
                return response
            if wait is not None:
                delay = max(delay, wait)
        await asyncio.sleep(delay)
        return self._next(request)

    async def process_exception(self, request: Request, exception: Exception) -> Request | None:
        attempt = request.meta.get("retry_attempt", 0)
        if request.meta.get("dont_retry") or attempt >= self.limits.retries or not is_transient(exception):
            return None
        await asyncio.sleep(self.limits.backoff_base_s * 2**attempt)
        return self._next(request)


class WarcRecorderMiddleware:
    """Every raw response (redirect hops and retried attempts included) goes to the shard's WARC part."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcRecorderMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        sink = getattr(self.crawler.spider, "sink", None)
        if sink is not None and not request.meta.get("playwright"):
            headers = [
                (key.decode("latin-1"), value.decode("latin-1"))
                for key, values in response.headers.items()
                for value in values
            ]
            sink.warc.write_response(
                response.url, response.status, headers, response.body, fetched_at=datetime.now(UTC)
            )
        return response
