"""JavaScript rendering through scrapy-playwright: the subresource guard and context recycling.

Chromium fetches subresources (scripts, XHR, images, iframes) itself, outside Scrapy's middlewares.
Every one of them passes Playwright route interception, where ``SubresourceGuard`` resolves the
host and aborts the request if the SSRF policy refuses it. Playwright does not route the hops of a
redirect Chromium follows itself, so a page is only ever rendered at the final URL of its static
fetch, whose redirects the Scrapy guard already checked.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from crawler.config import RenderConfig
from crawler.netguard import AddressPolicy, BlockedAddress, is_ip_literal

#: Schemes Chromium resolves without the network.
LOCAL_SCHEMES = {"data", "blob", "about", "chrome-extension"}


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


class ContextRotation:
    """Names browser contexts so that each serves ``pages_per_context`` renders, then is closed.

    Closing a used-up context frees its memory (caches, service workers, DOM storage), so memory
    stays bounded on long crawls; ``max_contexts`` caps how many are open at once.
    """

    def __init__(self, render: RenderConfig):
        self.pages_per_context = render.pages_per_context
        self.issued = 0
        self.finished: Counter[str] = Counter()

    def next_context(self) -> str:
        name = f"render-{self.issued // self.pages_per_context}"
        self.issued += 1
        return name

    async def release(self, page: Any, context_name: str) -> None:
        """Close a rendered page, and its context when all of the context's renders are done."""
        self.finished[context_name] += 1
        try:
            await page.close()
            if self.finished[context_name] >= self.pages_per_context:
                await page.context.close()
                del self.finished[context_name]
        except Exception:  # the browser may already have closed it (crash, disconnect)
            pass
