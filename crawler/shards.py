"""Crawl shards: the unit of work of one Scrapy subprocess and one Ray task.

Planning deduplicates by ``url_key`` first, so a page cited by many systems and queries is fetched
once, and keeps every cited spelling in ``original_urls``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from crawler.urls import InvalidURL, canonicalize_url, strip_credentials, url_key


@dataclass(frozen=True)
class ShardEntry:
    """One canonical URL to fetch, with the spellings that cited it."""

    url_key: str
    url: str
    original_urls: tuple[str, ...]
    invalid: str | None = None  # why the cited string is not a fetchable URL (then it ends as error)


@dataclass(frozen=True)
class CrawlShard:
    """A deterministic slice of a crawl's URLs.

    Attributes:
        shard_id: ``shard-00000``, ``shard-00001``...
        entries: The canonical URLs of the shard, in first-cited order.
    """

    shard_id: str
    entries: tuple[ShardEntry, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrawlShard:
        entries = tuple(
            ShardEntry(e["url_key"], e["url"], tuple(e["original_urls"]), e.get("invalid"))
            for e in data["entries"]
        )
        return cls(data["shard_id"], entries)


def shard_name(index: int) -> str:
    return f"shard-{index:05d}"


def group_urls(urls: Iterable[str]) -> list[ShardEntry]:
    """Deduplicate cited URLs by url_key; entries of one host stay together (first-cited order inside).

    Grouping by host means shards cut from this list rarely share a host, so shards running in
    parallel do not multiply the per-host politeness limit (a host with more URLs than a shard holds
    still spans several shards). A string that is not an http(s) URL keeps its own entry (keyed by a
    hash of the text) so that it ends, like every cited URL, with exactly one page record (``error``).
    """
    spellings: dict[str, list[str]] = {}
    canonical: dict[str, str] = {}
    invalid: dict[str, str] = {}
    for raw in urls:
        text = strip_credentials((raw or "").strip())  # a cited password is never stored
        try:
            canon = canonicalize_url(text)
            key = url_key(canon)
        except InvalidURL as exc:
            canon = text
            key = "x" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:19]
            invalid[key] = str(exc)
        canonical.setdefault(key, canon)
        if text not in spellings.setdefault(key, []):
            spellings[key].append(text)
    entries = [
        ShardEntry(key, canonical[key], tuple(sorted(spellings[key])), invalid.get(key)) for key in canonical
    ]
    return sorted(entries, key=lambda entry: urlsplit(entry.url).hostname or "")  # stable: cited order kept


def plan_shards(urls: Iterable[str], shard_size: int, *, first_index: int = 0) -> list[CrawlShard]:
    """Split URLs into shards of at most ``shard_size`` canonical URLs.

    The plan depends only on the input order and ``shard_size``.

    Args:
        urls: Cited URLs, duplicates and variant spellings allowed.
        shard_size: Canonical URLs per shard.
        first_index: Number of the first shard (a rerun with new URLs appends shards).
    """
    if shard_size < 1:
        raise ValueError("shard_size must be at least 1")
    entries = group_urls(urls)
    return [
        CrawlShard(shard_name(first_index + n), tuple(entries[start : start + shard_size]))
        for n, start in enumerate(range(0, len(entries), shard_size))
    ]
