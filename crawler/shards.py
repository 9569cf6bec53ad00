"""Crawl shards: the unit of work of one Scrapy subprocess and one Ray task.

Planning deduplicates by ``url_key`` first, so a page cited by many systems and queries is fetched
once, and keeps every cited spelling in ``original_urls``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, TypedDict
from urllib.parse import urlsplit

from crawler.urls import InvalidURL, canonicalize_url, strip_credentials, url_key


class HostPacing(TypedDict):
    """What the next process to crawl a host must wait for (JSON: it travels in shard specs/summaries).

    Wall-clock time, not monotonic: the host's next shard may run on another node (clocks in sync).
    """

    last_sent_at: float
    """Epoch seconds when the host was last sent a request."""
    crawl_delay_s: float | None
    """The host's robots.txt ``Crawl-delay`` as honoured (None: none)."""
    delay_s: float | None
    """The delay between two of its requests when its last response came (AutoThrottle's, learned from
    its latency; None: no response). With AutoThrottle on, the next process starts the host there."""


@dataclass(frozen=True)
class ShardEntry:
    """One canonical URL to fetch, with the spellings that cited it."""

    url_key: str
    url: str
    original_urls: tuple[str, ...]
    invalid: str | None = None  # why the cited string is not a fetchable URL (then it ends as error)
    fetch_url: str | None = None
    """Where to fetch it when not at ``url``: a cross-host redirect's target, deferred by an earlier round."""
    via: tuple[str, ...] = ()
    """The redirect hops followed before ``fetch_url`` by earlier rounds (the record's chain starts so)."""

    @property
    def target(self) -> str:
        """The URL the shard requests."""
        return self.fetch_url or self.url


@dataclass(frozen=True)
class CrawlShard:
    """A deterministic slice of a crawl's URLs.

    Attributes:
        shard_id: ``shard-00000``, ``shard-00001``...
        entries: The canonical URLs of the shard, in first-cited order.
    """

    shard_id: str
    entries: tuple[ShardEntry, ...]
    round: int = 0
    """0 for the cited URLs; n for the targets of cross-host redirects deferred by round n - 1."""

    def hosts(self) -> set[str]:
        """The hosts its entries are fetched from (invalid entries have none)."""
        return {entry_host(entry) for entry in self.entries} - {""}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrawlShard:
        entries = tuple(
            ShardEntry(
                e["url_key"],
                e["url"],
                tuple(e["original_urls"]),
                e.get("invalid"),
                e.get("fetch_url"),
                tuple(e.get("via", ())),
            )
            for e in data["entries"]
        )
        return cls(data["shard_id"], entries, data.get("round", 0))


def shard_name(index: int) -> str:
    return f"shard-{index:05d}"


def group_urls(urls: Iterable[str]) -> list[ShardEntry]:
    """Deduplicate cited URLs by url_key; entries of one host stay together (first-cited order inside).

    Grouping by host lets ``pack_entries`` keep each host in one shard, or in one chain of shards. A
    string that is not an http(s) URL keeps its own entry (keyed by a hash of the text, placed last)
    so that it ends, like every cited URL, with exactly one page record (``error``).
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
    # stable: cited order kept inside a host
    return sorted(entries, key=lambda entry: (entry.invalid is not None, entry_host(entry)))


def entry_host(entry: ShardEntry) -> str:
    """The host an entry is fetched from ("" for a string that is not a URL)."""
    return "" if entry.invalid else (urlsplit(entry.target).hostname or "")


def pack_entries(entries: list[ShardEntry], shard_size: int) -> list[list[ShardEntry]]:
    """Cut host-grouped entries into shards so that no host is split unless it must be.

    A host with at most ``shard_size`` URLs lands whole in one shard (several small hosts share a
    shard); a bigger host gets shards of its own, of near-equal size, which ``host_chains`` then runs
    one after another. Like Nutch's fetch lists partitioned by host: a host belongs to one fetcher at
    a time, so its politeness limits need no coordination between shards.
    """
    by_host: dict[str, list[ShardEntry]] = {}
    for entry in entries:
        by_host.setdefault(entry_host(entry), []).append(entry)
    cut: list[list[ShardEntry]] = []
    current: list[ShardEntry] = []
    for host_entries in by_host.values():
        if len(host_entries) > shard_size:
            parts = -(-len(host_entries) // shard_size)
            bounds = [len(host_entries) * part // parts for part in range(parts + 1)]
            cut += [host_entries[start:end] for start, end in zip(bounds, bounds[1:], strict=False)]
            continue
        if len(current) + len(host_entries) > shard_size:
            cut.append(current)
            current = []
        current += host_entries
    return [*cut, current] if current else cut


def plan_shards(urls: Iterable[str], shard_size: int, *, first_index: int = 0) -> list[CrawlShard]:
    """Split URLs into shards of at most ``shard_size`` canonical URLs (``pack_entries``).

    The plan depends only on the input order and ``shard_size``.

    Args:
        urls: Cited URLs, duplicates and variant spellings allowed.
        shard_size: Canonical URLs per shard.
        first_index: Number of the first shard (a rerun with new URLs appends shards).
    """
    if shard_size < 1:
        raise ValueError("shard_size must be at least 1")
    return [
        CrawlShard(shard_name(first_index + n), tuple(entries))
        for n, entries in enumerate(pack_entries(group_urls(urls), shard_size))
    ]


def redirect_round(
    entries: Iterable[ShardEntry], shard_size: int, round_no: int, first_index: int
) -> list[CrawlShard]:
    """The shards of redirect round ``round_no``: the entries an earlier round deferred, each to be
    fetched at its redirect target, packed by the target's host as the cited URLs are."""
    return [
        CrawlShard(shard_name(first_index + n), tuple(part), round_no)
        for n, part in enumerate(pack_entries(list(entries), shard_size))
    ]


def host_chains(shards: Iterable[CrawlShard]) -> list[list[CrawlShard]]:
    """Group shards that share a host; each group must run one shard after another.

    Two shards that share a host would each send ``per_host_concurrency`` requests to it. Running a
    group in sequence keeps every host's concurrency, delay and Crawl-delay across the cluster while
    groups run in parallel. A plan cut by ``pack_entries`` only groups the shards of a host bigger
    than a shard; shards appended by a later run for an already planned host join that host's group.

    Returns:
        The groups, the biggest (most URLs) first, each in shard order.
    """
    shards = list(shards)
    parent = list(range(len(shards)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    owner: dict[str, int] = {}
    for index, shard in enumerate(shards):
        for host in shard.hosts():
            if host in owner:
                parent[root(index)] = root(owner[host])
            else:
                owner[host] = index
    groups: dict[int, list[CrawlShard]] = {}
    for index, shard in enumerate(shards):
        groups.setdefault(root(index), []).append(shard)
    chains = [sorted(group, key=lambda shard: shard.shard_id) for group in groups.values()]
    return sorted(chains, key=lambda chain: -sum(len(shard.entries) for shard in chain))
