"""JavaScript rendering through scrapy-playwright: subresource guard, render deadline, context recycling.

Chromium fetches subresources (scripts, XHR, images, iframes) itself, outside Scrapy's middlewares.
Every one of them passes Playwright route interception, where ``SubresourceGuard`` resolves the
host and aborts the request if the SSRF policy refuses it; every connection Chromium then opens goes
through the shard's ``PinningProxy``, which resolves the host again and connects only to an address
it checked (Chromium resolves no name itself, so DNS rebinding and its own ``localhost`` -> ``::1``
cannot slip past the check). Playwright does not route the hops of a
redirect Chromium follows itself, so a page is only ever rendered at the final URL of its static
fetch, whose redirects the Scrapy guard already checked.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Page
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler
from scrapy_playwright.page import PageMethod

from crawler.config import RenderConfig
from crawler.fetch.middlewares import crawl_config
from crawler.netguard import AddressPolicy, BlockedAddress, is_ip_literal
from crawler.visibility import MARK_HIDDEN_SCRIPT

#: Schemes Chromium resolves without the network.
LOCAL_SCHEMES = {"data", "blob", "about", "chrome-extension"}
#: Seconds a browser context gets to close before it is left to the browser's shutdown.
CLOSE_TIMEOUT_S = 10.0
#: Scrapy setting holding the shard's PinningProxy (Chromium connects through it only).
PROXY_SETTING = "SOURCEBENCH_RENDER_PROXY"


class SubresourceGuard:
    """``PLAYWRIGHT_ABORT_REQUEST`` predicate: True (abort) for requests the policy refuses."""

    def __init__(self, policy: AddressPolicy):
        self.policy = policy
        self.blocked: list[str] = []
        self._verdicts: dict[str, bool] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> SubresourceGuard:
        # Scrapy deep-copies its settings per crawler; the shard process must keep this instance to
        # report what it blocked.
        return self

    async def __call__(self, request: Any) -> bool:
        parts = urlsplit(request.url)
        if parts.scheme in LOCAL_SCHEMES:
            return False
        if parts.scheme not in ("http", "https", "ws", "wss"):
            self.blocked.append(request.url)
            return True
        host = parts.hostname or ""
        if host not in self._verdicts:
            if is_ip_literal(host):
                addresses = [host.strip("[]")]
            else:
                try:
                    infos = await asyncio.get_running_loop().getaddrinfo(host, parts.port or 443)
                    addresses = sorted({info[4][0] for info in infos})
                except OSError:
                    addresses = []
            try:
                self.policy.check_addresses(host, addresses)
                self._verdicts[host] = False
            except BlockedAddress:
                self._verdicts[host] = True
        if self._verdicts[host]:
            self.blocked.append(request.url)
        return self._verdicts[host]


class RenderTimeout(Exception):
    """A render that did not finish (navigation, settle wait and snapshot) within its deadline."""


class ContextRotation:
    """Names browser contexts so that each serves ``pages_per_context`` renders, then is closed.

    Closing a used-up context frees its memory (caches, service workers, DOM storage), so memory
    stays bounded on long crawls; ``max_contexts`` caps how many are open at once. Every render
    counts when it ends, however it ends (also when it failed before a page existed): a context
    left open because one of its renders was never counted would hold a ``max_contexts`` slot for
    ever and stall every later render.
    """

    def __init__(self, render: RenderConfig):
        self.pages_per_context = render.pages_per_context
        self.issued = 0
        self.finished: Counter[str] = Counter()

    def next_context(self) -> str:
        name = f"render-{self.issued // self.pages_per_context}"
        self.issued += 1
        return name

    def used_up(self, context_name: str) -> bool:
        """Count one ended render of ``context_name``; True when that was the context's last one."""
        self.finished[context_name] += 1
        if self.finished[context_name] < self.pages_per_context:
            return False
        del self.finished[context_name]
        return True


class DeadlinePlaywrightHandler(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's download handler with a deadline per render and context rotation.

    scrapy-playwright bounds navigation, but not the rest of a render: a page whose scripts keep
    the renderer busy after the load event never answers the snapshot (``page.content()``), and
    its request would never end. Here each render, once its page exists, gets ``deadline_s``; past
    it the render fails with RenderTimeout and scrapy-playwright closes the page. The handler also
    names each render's context (ContextRotation) and closes a context when its last render ended.

    It overrides two private methods of scrapy-playwright (0.0.4x); tests/crawler/test_render.py
    fails if a release renames them.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        render = crawl_config(crawler).render
        self.deadline_s = render.deadline_s
        self.rotation = ContextRotation(render)
        self.proxy = crawler.settings.get(PROXY_SETTING)

    async def _download_request(self, request: Request, spider: Spider | None = None) -> Response:
        if self.proxy is not None:
            await self.proxy.start()
        name = request.meta["playwright_context"] = self.rotation.next_context()
        # last page method: the browser marks what it does not show (crawler.visibility removes it)
        methods = request.meta.setdefault("playwright_page_methods", [])
        if not any(getattr(m, "args", None) == (MARK_HIDDEN_SCRIPT,) for m in methods):
            methods.append(PageMethod("evaluate", MARK_HIDDEN_SCRIPT))
        try:
            return await super()._download_request(request, spider)
        finally:
            if self.rotation.used_up(name) and name in self.context_wrappers:
                with suppress(Exception):  # already closed (browser crash, disconnect)
                    await asyncio.wait_for(self.context_wrappers[name].context.close(), CLOSE_TIMEOUT_S)

    async def _download_request_with_page(self, request: Request, page: Page, spider: Spider) -> Response:
        try:
            return await asyncio.wait_for(
                super()._download_request_with_page(request, page, spider), self.deadline_s
            )
        except TimeoutError:
            raise RenderTimeout(f"render did not finish within {self.deadline_s:g} s") from None
