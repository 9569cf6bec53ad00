"""A Scrapy download handler that answers from WARC/ARC archives instead of the network.

Redirects, robots.txt, size caps and extraction all run exactly as in a live crawl; only the bytes
come from the archive. A URL the archives do not hold ends as ``error``.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.core.downloader.handlers.base import BaseDownloadHandler
from scrapy.crawler import Crawler
from scrapy.http import Headers, Response
from scrapy.responsetypes import responsetypes

from crawler.fetch.failures import FetchFailure
from crawler.fetch.middlewares import crawl_config
from crawler.warc import WarcIndex


class ReplayDownloadHandler(BaseDownloadHandler):
    """Serve http(s) requests from the crawl config's ``replay_warcs``."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        config = crawl_config(crawler)
        self.max_bytes = config.limits.max_bytes
        self.index = WarcIndex(config.replay_warcs)

    async def download_request(self, request: Request) -> Response:
        archived = self.index.get(request.url, limit=self.max_bytes)
        if archived is None:
            raise FetchFailure("error", "not in the replay archives")
        if archived.truncated:
            raise FetchFailure("too_large", f"archived body is larger than {self.max_bytes} bytes")
        headers = Headers(archived.headers)
        cls = responsetypes.from_args(headers=headers, url=request.url, body=archived.body)
        return cls(
            url=request.url, status=archived.status, headers=headers, body=archived.body, request=request
        )
