"""What a rerun of an audit must redo: stale pages and judgments, found from what the run holds.

A stage's marker says its output was complete for one config. A rerun of the same run folder redoes
exactly what is stale since then, for the affected items only:

- **Pages** whose status the current settings could change: a network policy change refetches the
  pages it refused (``blocked_address``), a robots change the ``robots_disallowed`` ones, a longer
  timeout the ``timeout`` ones, and so on (:data:`SETTING_STATUSES`). Transport failures
  (``error``, ``timeout``) are fetched again by every rerun of a live crawl (a replayed archive
  answers the same every time). ``--retry-failed`` fetches every failed page again; ``--force crawl``
  every page.
- **Judgments** that ended ``error`` (a transport failure) and were not judged since; with
  ``--retry-failed`` the ``unscorable`` ones too; ``--force judge`` drops them all.

Dropped page records and judgments are rewritten out of their Parquet parts atomically, so nothing
is ever doubled: a row is still in its part (and kept), or gone (and made again).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from crawler.base import RunStore
from crawler.layout import LAYOUT
from crawler.runner import reopen_shard
from crawler.schema import PAGE_STATUSES, RETRYABLE_STATUSES

#: Page statuses of a transport failure: a rerun of a live crawl fetches them again.
TRANSPORT_STATUSES = frozenset({"error", "timeout"})
#: Judgment statuses of a transport failure: a rerun judges them again.
JUDGE_RETRY_STATUSES = frozenset({"error"})
#: What ``--retry-failed`` judges again on top of the transport failures.
JUDGE_FAILED_STATUSES = frozenset({"error", "unscorable"})

#: Crawl setting (dotted path in ``CrawlConfig``, or a prefix of one) -> page statuses it decides.
#: A change to the setting refetches the pages that ended with those statuses.
SETTING_STATUSES: dict[str, frozenset[str]] = {
    "network.allow_private_networks": frozenset({"blocked_address"}),
    "network.allowlist": frozenset({"blocked_address"}),
    "network.obey_robots": frozenset({"robots_disallowed"}),
    "limits.timeout_s": frozenset({"timeout"}),
    "limits.retries": frozenset({"error", "timeout", "http_error"}),
    "limits.max_retry_after_s": frozenset({"http_error"}),
    "limits.max_redirects": frozenset({"error"}),
    "limits.max_bytes": frozenset({"too_large"}),
    "limits.min_text_chars": frozenset({"too_short"}),
    "render": frozenset({"too_short"}),
    "stall_timeout_s": frozenset({"timeout", "error"}),
    "shard_timeout_s": frozenset({"error"}),
    "shard_stop_grace_s": frozenset({"error"}),
    "replay_warcs": frozenset(PAGE_STATUSES),
}


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists and scalars are leaves)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def changed_settings(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Dotted paths whose value differs between two config dumps."""
    before, after = flatten(old), flatten(new)
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def statuses_for(changed: Iterable[str]) -> tuple[set[str], list[str]]:
    """The page statuses a set of changed crawl settings can change, and the settings that map to none."""
    statuses: set[str] = set()
    unmapped: list[str] = []
    for key in changed:
        hits = [s for prefix, s in SETTING_STATUSES.items() if key == prefix or key.startswith(f"{prefix}.")]
        if hits:
            statuses.update(*hits)
        else:
            unmapped.append(key)
    return statuses, unmapped


def reopen_pages(store: RunStore, statuses: Collection[str]) -> int:
    """Drop the committed page records with these statuses from every shard, so the crawl fetches
    them again (``ok`` included, for ``--force crawl``). Returns how many were dropped."""
    if not statuses or not store.exists(LAYOUT.crawl_shards):
        return 0
    shards = [name.removesuffix(".json") for name in store.listdir(LAYOUT.crawl_shards, suffix=".json")]
    return sum(reopen_shard(store, shard, statuses) for shard in shards)


def _judgment_parts(store: RunStore) -> list[str]:
    return store.listdir(LAYOUT.judgments, suffix=".parquet") if store.exists(LAYOUT.judgments) else []


def unresolved_judgments(store: RunStore, statuses: Collection[str]) -> int:
    """Judgment keys whose rows have one of ``statuses`` and no later final row (scored, unscorable,
    skipped) unless that status is itself in ``statuses``."""
    wanted = set(statuses)
    failed: set[str] = set()
    settled: set[str] = set()
    for name in _judgment_parts(store):
        table = store.read_part(f"{LAYOUT.judgments}/{name}", ["judgment_key", "status"])
        for key, status in zip(table["judgment_key"].to_pylist(), table["status"].to_pylist(), strict=True):
            (failed if status in wanted else settled).add(key)
    return len(failed - settled)


def forget_unit(store: RunStore, unit: str | None) -> None:
    """Delete the done markers of a judge unit under every judge identity, so the judge redoes it."""
    if unit is None:
        return
    root = store.path(LAYOUT.judge_markers())
    selector = pafs.FileSelector(root, allow_not_found=True, recursive=False)
    for info in store.fs.get_file_info(selector):
        if info.type == pafs.FileType.Directory and store.exists(LAYOUT.judge_marker(info.base_name, unit)):
            store.delete(LAYOUT.judge_marker(info.base_name, unit))


def drop_judgments(store: RunStore, statuses: Collection[str] | None) -> int:
    """Rewrite the run's judgment parts without the rows of these statuses (None: drop every row).

    Each part is rewritten atomically or deleted when nothing is left. Returns the rows dropped.
    """
    dropped = 0
    wanted = pa.array(sorted(statuses or ()), pa.string())
    for name in _judgment_parts(store):
        part = f"{LAYOUT.judgments}/{name}"
        status = store.read_part(part, ["status"])["status"]
        drop = pc.is_in(status, value_set=wanted) if statuses is not None else pa.array([True] * len(status))
        count = pc.sum(drop).as_py() or 0
        if not count:
            continue
        forget_unit(store, LAYOUT.unit_of_judgment_part(name))  # marker first: a crash leaves it undone
        store.drop_rows(part, drop)
        dropped += count
    return dropped


def retry_statuses(retry_failed: bool, force: bool, replay: bool) -> set[str]:
    """Page statuses a rerun fetches again whatever the settings say."""
    if force:
        return set(PAGE_STATUSES)
    if retry_failed:
        return set(RETRYABLE_STATUSES)
    return set() if replay else set(TRANSPORT_STATUSES)
