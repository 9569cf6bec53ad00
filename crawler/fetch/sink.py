"""Committing a shard's output in parts: ``pages/<shard>-<seq>.parquet`` + ``warc/<shard>-<seq>.warc.gz``
(+ ``crawl/redirects/<shard>-<seq>.json``, the cross-host redirects left to the next round).

A part's WARC file is written first and its Parquet file last: a committed Parquet part is the
commit point of its page records, a committed redirects file that of its deferred redirects. A
process killed at any moment leaves complete parts only
(RunStore writes atomically), and a restart skips every url_key found in committed parts.
"""

from __future__ import annotations

from typing import Any

from crawler.layout import LAYOUT
from crawler.records import records_to_table
from crawler.storage import RunStore
from crawler.warc import WARC_COMPRESSION_LEVEL, WarcPartWriter


def part_names(store: RunStore, shard_id: str) -> list[str]:
    """Names of the committed Parquet parts of one shard."""
    return [
        name for name in store.listdir(LAYOUT.pages, suffix=".parquet") if name.startswith(f"{shard_id}-")
    ]


def next_sequence(store: RunStore, shard_id: str) -> int:
    """The first part number not used by any Parquet, WARC or redirects part of the shard."""
    names = (
        store.listdir(LAYOUT.pages, suffix=".parquet")
        + store.listdir(LAYOUT.warc, suffix=".warc.gz")
        + store.listdir(LAYOUT.crawl_redirects, suffix=".json")
    )
    numbers = [part[1] for name in names if (part := LAYOUT.part_of(name)) and part[0] == shard_id]
    return max(numbers, default=-1) + 1


def committed_redirects(store: RunStore, shard_id: str) -> list[dict[str, Any]]:
    """The cross-host redirects this shard deferred to the next round, each ``{url_key, target, via}``."""
    return [
        redirect
        for name in store.listdir(LAYOUT.crawl_redirects, suffix=".json")
        if name.startswith(f"{shard_id}-")
        for redirect in store.read_json(f"{LAYOUT.crawl_redirects}/{name}")
    ]


def committed_keys(store: RunStore, shard_id: str) -> set[str]:
    """url_keys this shard is done with: a committed record, or a redirect deferred to the next round."""
    keys = {redirect["url_key"] for redirect in committed_redirects(store, shard_id)}
    for name in part_names(store, shard_id):
        table = store.read_part(LAYOUT.page_part(name), ["url_key"])
        keys.update(table.column("url_key").to_pylist())
    return keys


class PartSink:
    """Buffers page records, deferred redirects and raw responses, committing a part every
    ``flush_every`` of the first two.

    Args:
        store: The run.
        shard_id: Prefix of the part names.
        first_seq: The first part number to use (``next_sequence``).
        flush_every: Records per part.
        flush_bytes: A part is also committed when its WARC data grows past this.
        warc_compression_level: The zlib level of the WARC parts.
    """

    def __init__(
        self,
        store: RunStore,
        shard_id: str,
        first_seq: int,
        flush_every: int,
        flush_bytes: int,
        warc_compression_level: int = WARC_COMPRESSION_LEVEL,
    ):
        self.store, self.shard_id, self.seq = store, shard_id, first_seq
        self.flush_every, self.flush_bytes = flush_every, flush_bytes
        self.warc_compression_level = warc_compression_level
        self.records: list[dict[str, Any]] = []
        self.redirects: list[dict[str, Any]] = []
        self.warc = WarcPartWriter(compression_level=warc_compression_level)
        self.done: set[str] = set()
        self.parts = 0

    def add(self, record: dict[str, Any]) -> None:
        """Buffer one page record (the first record of a url_key wins; a second is a bug upstream)."""
        if record["url_key"] in self.done:
            return
        self.done.add(record["url_key"])
        self.records.append(record)
        self._flush_if_full()

    def defer(self, url_key: str, target: str, via: list[str]) -> None:
        """Leave a url_key to the next round, to be fetched at ``target`` after the hops ``via``."""
        if url_key in self.done:
            return
        self.done.add(url_key)
        self.redirects.append({"url_key": url_key, "target": target, "via": via})
        self._flush_if_full()

    def _flush_if_full(self) -> None:
        if len(self.records) + len(self.redirects) >= self.flush_every or self.warc.size >= self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        """Commit what is buffered: the WARC part first, the deferred redirects, the Parquet part last."""
        if not self.records and not self.redirects:
            return
        stem = LAYOUT.part_stem(self.shard_id, self.seq)
        if self.warc.records:
            self.store.write_bytes(LAYOUT.warc_part(stem), self.warc.getvalue())
        if self.redirects:
            self.store.write_json(LAYOUT.crawl_redirect_part(stem), self.redirects)
        if self.records:
            self.store.write_table(LAYOUT.page_part(f"{stem}.parquet"), records_to_table(self.records))
        self.warc.close()
        self.warc = WarcPartWriter(compression_level=self.warc_compression_level)
        self.records, self.redirects = [], []
        self.seq += 1
        self.parts += 1

    def close(self) -> None:
        self.flush()
        self.warc.close()
