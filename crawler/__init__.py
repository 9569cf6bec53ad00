"""The crawler: canonical URLs, SSRF-guarded polite fetching (Scrapy + Playwright), extraction, WARC.

Public interface (what the jobs layer calls)::

    from crawler import CrawlConfig, plan_shards, run_shard, read_pages, extract_page
"""

from crawler.config import CrawlConfig, FetchLimits, NetworkPolicy, Politeness, RenderConfig
from crawler.extract import extract_page
from crawler.netguard import AddressPolicy, BlockedAddress
from crawler.records import page_record, records_to_table
from crawler.runner import read_pages, run_shard
from crawler.schema import PAGE_SCHEMA, PAGE_SCHEMA_VERSION, PAGE_STATUSES, SIGNALS_TYPE
from crawler.shards import CrawlShard, ShardEntry, plan_shards
from crawler.urls import InvalidURL, canonicalize_url, url_key
from crawler.warc import WarcIndex, iter_responses, write_warc

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
