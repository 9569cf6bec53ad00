"""The crawler: canonical URLs, SSRF-guarded polite fetching (Scrapy + Playwright), extraction, WARC.

Public interface (what the jobs layer calls)::

    from crawler import CrawlConfig, plan_shards, run_shard, read_pages, extract_page
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.lazy import lazy_exports

#: public name -> the module that defines it (imported on first use, PEP 562: importing the package
#: stays cheap, so `sourcebench --help` does not load every dependency).
_HOMES = {
    "CrawlConfig": "crawler.config",
    "FetchLimits": "crawler.config",
    "NetworkPolicy": "crawler.config",
    "Politeness": "crawler.config",
    "RenderConfig": "crawler.config",
    "extract_page": "crawler.extract",
    "AddressPolicy": "crawler.netguard",
    "BlockedAddress": "crawler.netguard",
    "page_record": "crawler.records",
    "records_to_table": "crawler.records",
    "read_pages": "crawler.runner",
    "run_shard": "crawler.runner",
    "PAGE_SCHEMA": "crawler.schema",
    "PAGE_SCHEMA_VERSION": "crawler.schema",
    "PAGE_STATUSES": "crawler.schema",
    "SIGNALS_TYPE": "crawler.schema",
    "CrawlShard": "crawler.shards",
    "ShardEntry": "crawler.shards",
    "plan_shards": "crawler.shards",
    "InvalidURL": "crawler.urls",
    "canonicalize_url": "crawler.urls",
    "url_key": "crawler.urls",
    "WarcIndex": "crawler.warc",
    "iter_responses": "crawler.warc",
    "write_warc": "crawler.warc",
}

__all__ = [
    "PAGE_SCHEMA",
    "PAGE_SCHEMA_VERSION",
    "PAGE_STATUSES",
    "SIGNALS_TYPE",
    "AddressPolicy",
    "BlockedAddress",
    "CrawlConfig",
    "CrawlShard",
    "FetchLimits",
    "InvalidURL",
    "NetworkPolicy",
    "Politeness",
    "RenderConfig",
    "ShardEntry",
    "WarcIndex",
    "canonicalize_url",
    "extract_page",
    "iter_responses",
    "page_record",
    "plan_shards",
    "read_pages",
    "records_to_table",
    "run_shard",
    "url_key",
    "write_warc",
]

if TYPE_CHECKING:
    from crawler.config import CrawlConfig, FetchLimits, NetworkPolicy, Politeness, RenderConfig
    from crawler.extract import extract_page
    from crawler.netguard import AddressPolicy, BlockedAddress
    from crawler.records import page_record, records_to_table
    from crawler.runner import read_pages, run_shard
    from crawler.schema import PAGE_SCHEMA, PAGE_SCHEMA_VERSION, PAGE_STATUSES, SIGNALS_TYPE
    from crawler.shards import CrawlShard, ShardEntry, plan_shards
    from crawler.urls import InvalidURL, canonicalize_url, url_key
    from crawler.warc import WarcIndex, iter_responses, write_warc


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
