"""Running one shard (a Scrapy subprocess), reopening one to retry failed URLs, reading pages back.

``run_shard`` is what a Ray task calls: it skips a shard already done, resumes a partly committed
one (only url_keys without a committed record are fetched), waits for the subprocess, gives any URL
it left without a record an ``error`` record, and writes the shard's done marker last. ``host_pacing``
reads from shard summaries what the next shard of a host must wait for.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from crawler.config import CrawlConfig
from crawler.fetch.sink import PartSink, committed_keys, committed_redirects, next_sequence, part_names
from crawler.launch import ShardProcess
from crawler.layout import LAYOUT
from crawler.records import page_record
from crawler.schema import PAGE_SCHEMA
from crawler.shards import CrawlShard, HostPacing, entry_host
from crawler.storage import RunStore

if TYPE_CHECKING:
    import pyarrow.dataset as ds


def page_status_counts(store: RunStore, parts: Iterable[str] | None = None) -> dict[str, int]:
    """Committed page records by status, over some page parts (every part when None), sorted by status;
    only the status column is read."""
    counts: Counter[str] = Counter()
    for name in store.listdir(LAYOUT.pages, suffix=".parquet") if parts is None else parts:
        counts.update(store.read_part(LAYOUT.page_part(name), ["status"]).column("status").to_pylist())
    return dict(sorted(counts.items()))


def host_pacing(
    summaries: Iterable[dict[str, Any]], start: dict[str, HostPacing] | None = None
) -> dict[str, HostPacing]:
    """Per host, over ``start`` and shard summaries (or reports): when it was last sent a request, its
    largest Crawl-delay, and the delay its latest process ended with."""
    pacing: dict[str, HostPacing] = dict(start or {})
    for summary in summaries:
        for host, stats in summary.get("hosts", {}).items():
            if not stats.get("last_sent_at"):
                continue
            known = pacing.get(host)
            delays = [d for d in (stats.get("crawl_delay_s"), known and known["crawl_delay_s"]) if d]
            latest = known is None or stats["last_sent_at"] >= known["last_sent_at"]
            pacing[host] = {
                "last_sent_at": stats["last_sent_at"] if latest else known["last_sent_at"],
                "crawl_delay_s": max(delays) if delays else None,
                "delay_s": stats.get("delay_s") if latest else known.get("delay_s"),
            }
    return pacing


def pacing_for(pacing: dict[str, HostPacing], hosts: Iterable[str]) -> dict[str, HostPacing]:
    """The part of ``pacing`` for ``hosts`` (a task or a process gets its own hosts only)."""
    return {host: pacing[host] for host in hosts if host in pacing}


def _run_subprocess(
    store: RunStore,
    shard: CrawlShard,
    config: CrawlConfig,
    pacing: dict[str, HostPacing],
) -> dict[str, Any]:
    """Run ``shard``'s entries in a new shard process; returns its report (or why it failed)."""
    with (
        tempfile.TemporaryDirectory(prefix=f"sb-{shard.shard_id}-") as tmp,
        ShardProcess() as proc,
    ):
        spec_path, report_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "report.json")
        spec = {
            "run_uri": store.uri,
            "shard": shard.to_dict(),
            "config": config.model_dump(mode="json"),
            "first_seq": next_sequence(store, shard.shard_id),
            "report_path": report_path,
            "host_pacing": pacing,
            "pacing_checkpoint": {
                "run_uri": store.uri,
                "path": LAYOUT.crawl_pacing(shard.shard_id),
                "every_s": config.politeness.pacing_checkpoint_s,
            },
        }
        Path(spec_path).write_text(json.dumps(spec))
        started = time.time()
        code = proc.run(spec_path, config.shard_timeout_s + config.shard_stop_grace_s)
        if code == 0 and os.path.exists(report_path):
            return json.loads(Path(report_path).read_text())
        failed = {"failed": f"shard process ended with {code}", "log_tail": proc.log_tail()}
        left = store.read_json_if_present(LAYOUT.crawl_pacing(shard.shard_id))
        if left and left["written_at"] >= started:  # its own checkpoint, not an earlier attempt's
            failed["hosts"] = left["hosts"]
        return failed


def _pacing_after_lost(
    checkpoint: dict[str, Any], hosts: Iterable[str], pacing: dict[str, HostPacing], ended: float
) -> dict[str, HostPacing]:
    """The pacing of ``hosts`` after an attempt of the shard that left no report (its process died, or
    its node or driver was lost): the Crawl-delays and delays its last ``checkpoint`` held (its
    ``hosts``), and a request to each host at ``ended`` (epoch seconds), as late as the attempt may
    have sent one."""
    left = host_pacing([checkpoint], start=pacing)
    return {
        host: {
            "crawl_delay_s": None,
            "delay_s": None,
            **left.get(host, {}),
            "last_sent_at": max(ended, left.get(host, {}).get("last_sent_at", 0.0)),
        }
        for host in hosts
    }


def _missing_reason(report: dict[str, Any], config: CrawlConfig) -> str:
    """Why the last process of a shard left URLs without a record."""
    if "failed" in report:
        return str(report["failed"])
    if report.get("time_limited"):
        limit = config.shard_timeout_s
        return f"two shard processes in a row committed nothing within shard_timeout_s ({limit:g} s)"
    return "no record written"


def _host_stats(
    shard: CrawlShard, reports: list[dict[str, Any]], pacing: dict[str, HostPacing]
) -> dict[str, dict[str, Any]]:
    """Per host of the shard: its URLs, the requests sent to it, the seconds it kept the shard busy,
    and its pacing after the shard (``pacing`` is what it was before)."""
    urls = Counter(entry_host(entry) for entry in shard.entries if not entry.invalid)
    stats: dict[str, dict[str, Any]] = {
        host: {"urls": count, "requests": 0, "active_s": 0.0} for host, count in urls.items()
    }
    for report in reports:
        for host, timing in report.get("hosts", {}).items():
            if host in stats:
                stats[host]["requests"] += timing["requests"]
                stats[host]["active_s"] = round(stats[host]["active_s"] + timing["active_s"], 3)
    after = host_pacing(reports, start=pacing)
    for host, row in stats.items():
        row.update(after.get(host, {}))
    return stats


def run_shard(
    shard: CrawlShard,
    run_uri: str,
    config: CrawlConfig,
    pacing: dict[str, HostPacing] | None = None,
) -> dict[str, Any]:
    """Crawl one shard into ``<run>/pages/<shard_id>-<seq>.parquet`` and ``<run>/warc/...warc.gz``.

    Safe to call inside a Ray task and safe to call again after a crash: a done shard returns its
    stored summary; a partial one fetches only the url_keys without a committed record. A process
    that stops at ``shard_timeout_s`` is followed by a new one for the URLs it left; one that dies is
    retried once; after two processes in a row that died or committed nothing, the URLs still without
    a record end as ``error``.

    Args:
        shard: The shard to crawl.
        run_uri: The run directory.
        config: The crawl configuration.
        pacing: What earlier shards left of their hosts' delays (``host_pacing`` of their
            summaries): each host's first request waits for its delay since its last one.

    Returns:
        The shard summary (also stored in ``crawl/_done/<shard_id>.json``): counts by status, per-host
        URLs, requests, busy seconds and pacing, pages, parts, the cross-host redirects left to the next
        round, wall time, peak memory of the shard process, robots/render settings.
    """
    store = RunStore(run_uri)
    if store.is_done(LAYOUT.crawl, shard.shard_id):
        return store.done_info(LAYOUT.crawl, shard.shard_id)
    started = time.monotonic()
    hosts = shard.hosts()
    pacing = pacing_for(pacing or {}, hosts)
    earlier = store.read_json_if_present(LAYOUT.crawl_pacing(shard.shard_id))
    if earlier:  # an attempt of this shard began before this call, in a task or driver that was lost
        ended = min(time.time(), earlier["written_at"] + config.politeness.pacing_checkpoint_s)
        pacing = _pacing_after_lost(earlier, hosts, pacing, round(ended, 3))
    reports: list[dict[str, Any]] = []
    fruitless = 0  # processes in a row that died or committed nothing
    while fruitless < 2:
        done = committed_keys(store, shard.shard_id)
        remaining = tuple(e for e in shard.entries if e.url_key not in done)
        if not remaining:
            break
        report = _run_subprocess(store, replace(shard, entries=remaining), config, pacing)
        reports.append(report)
        if "failed" in report:
            pacing = _pacing_after_lost(report, hosts, pacing, round(time.time(), 3))
            fruitless += 1
        elif report.get("time_limited"):  # it stopped at shard_timeout_s: the rest goes on in a new one
            pacing = host_pacing([report], start=pacing)
            fruitless = 0 if report.get("fetched") else fruitless + 1
        else:
            break
    done = committed_keys(store, shard.shard_id)
    missing = [e for e in shard.entries if e.url_key not in done]
    if missing:
        reason = _missing_reason(reports[-1], config) if reports else "no record written"
        sink = PartSink(
            store, shard.shard_id, next_sequence(store, shard.shard_id), len(missing) + 1, 1 << 62
        )
        for entry in missing:
            sink.add(page_record(entry.url, key=entry.url_key, original_urls=entry.original_urls,
                                 status="error", error=f"crawler failed: {reason}"[:500]))  # fmt: skip
        sink.close()
    summary = {
        "shard_id": shard.shard_id,
        "urls": len(shard.entries),
        "hosts": _host_stats(shard, reports, pacing),
        "statuses": page_status_counts(store, part_names(store, shard.shard_id)),
        "parts": len(part_names(store, shard.shard_id)),
        "deferred_redirects": len(committed_redirects(store, shard.shard_id)),
        "wall_s": round(time.monotonic() - started, 3),
        "attempts": len(reports),
        "time_limit_stops": sum(1 for r in reports if r.get("time_limited")),
        "process_warm_up_s": reports[0].get("warm_up_s") if reports else None,
        "process_warm_up_cpu_s": reports[0].get("warm_up_cpu_s") if reports else None,
        "cpu_s": round(sum(r.get("cpu_s", 0.0) for r in reports), 3),
        "process_forked": reports[0].get("forked") if reports else None,
        "peak_rss_mb": max([r.get("peak_rss_mb", 0) for r in reports] or [0]),
        "render_blocked_count": sum(r.get("render_blocked_count", 0) for r in reports),
        "render_blocked_requests": [u for r in reports for u in r.get("render_blocked_requests", [])][:100],
        "render_contexts_opened": sum(r.get("render_contexts_opened", 0) for r in reports),
        "render_contexts_max_open": max([r.get("render_contexts_max_open", 0) for r in reports] or [0]),
        "failures": [r["failed"] for r in reports if "failed" in r],
        "stalls": [r["stalled"] for r in reports if r.get("stalled")],
        "obey_robots": config.network.obey_robots,
        "render_policy": config.render.policy,
        "replay": bool(config.replay_warcs),
    }
    store.mark_done(LAYOUT.crawl, shard.shard_id, summary)
    if store.exists(LAYOUT.crawl_pacing(shard.shard_id)):  # the summary holds the pacing now
        store.delete(LAYOUT.crawl_pacing(shard.shard_id))
    return summary


def reopen_shard(store: RunStore, shard_id: str, statuses: Collection[str]) -> int:
    """Drop a shard's committed records whose status is in ``statuses``, so that ``run_shard``
    fetches those URLs again (a later run retrying timeouts and transient errors).

    The done marker goes first, so a crash midway leaves a shard that the next run resumes; each part
    is then rewritten without those records (atomically), or deleted when none is left. A record is
    never doubled: it is still in its part (and kept), or gone (and fetched again). The raw responses
    stay in the WARC parts, as the archive of what each attempt got.

    Returns:
        How many records were dropped.
    """
    if not statuses:
        return 0
    wanted = pa.array(sorted(statuses), pa.string())
    parts = []
    for name in part_names(store, shard_id):  # the status column only: most parts have nothing to drop
        status = store.read_part(LAYOUT.page_part(name), ["status"])
        drop = pc.is_in(status.column("status"), value_set=wanted)
        if pc.any(drop).as_py():
            parts.append((name, drop))
    if not parts:
        return 0
    store.forget_done(LAYOUT.crawl, shard_id)
    for name, drop in parts:
        store.drop_rows(LAYOUT.page_part(name), drop)
    return sum(pc.sum(drop).as_py() for _, drop in parts)


def pages_dataset(store: RunStore) -> ds.Dataset:
    """The committed page records of a run (every part) as a dataset, to scan only the columns and rows
    needed: the texts make the whole records large."""
    import pyarrow.dataset as ds  # pulls in pandas: not at import, so `--help` stays fast

    if not store.exists(LAYOUT.pages):
        return ds.dataset(PAGE_SCHEMA.empty_table())
    return ds.dataset(store.path(LAYOUT.pages), filesystem=store.fs, format="parquet", schema=PAGE_SCHEMA)


def read_pages(run_uri: str) -> pa.Table:
    """Every page record of a run (PAGE_SCHEMA; one row per url_key)."""
    return RunStore(run_uri).read_table(LAYOUT.pages, schema=PAGE_SCHEMA)
