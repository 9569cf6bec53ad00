"""``sourcebench crawl``: fetch and extract a run's cited pages, one Ray task (Scrapy subprocess) per shard.

Examples::

    sourcebench crawl --run runs/audit1 --urls urls.txt
    sourcebench crawl --run s3://bucket/audits/a1 --urls citations.jsonl --config crawl.yaml
    sourcebench crawl --run runs/offline --urls urls.txt --replay archive.warc.gz
    ray job submit --working-dir . -- python -m jobs.crawl --run s3://bucket/a1 --urls s3-free-list.txt

Output: ``<run>/pages/*.parquet`` (PAGE_SCHEMA, one row per url_key), ``<run>/warc/*.warc.gz``,
``<run>/crawl/manifest.json`` (config, robots override), ``crawl/shards/*.json`` (the plan, redirect
rounds included), ``crawl/redirects/*.json`` (the cross-host redirects each shard left to the next round),
``crawl/_done/*.json`` (per-shard summaries), ``crawl/hosts.json`` (per-host backlog: URLs, shards,
time spent) and ``crawl/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler.base import InputError, RunStore, apply_override
from crawler.config import CrawlConfig
from crawler.fetch.sink import committed_redirects
from crawler.layout import LAYOUT
from crawler.runner import host_pacing, pacing_for, reopen_shard, run_shard
from crawler.schema import RETRYABLE_STATUSES
from crawler.shards import (
    CrawlShard,
    HostPacing,
    group_urls,
    host_chains,
    pack_entries,
    redirect_round,
    shard_name,
)
from jobs.cli import add_set_argument, positive_int, run_module
from jobs.progress import crawl_progress
from jobs.ray_runtime import RayConfig, ensure_ray

log = logging.getLogger("sourcebench.crawl")


def load_plan(store: RunStore, urls: Iterable[str], shard_size: int) -> list[CrawlShard]:
    """The run's shard plan: the stored one, plus new shards for url_keys it does not hold yet.

    Storing the plan keeps every url_key in exactly one shard across reruns, even when the input
    grows or the shard size changes.
    """
    names = store.listdir(LAYOUT.crawl_shards, suffix=".json")
    shards = [CrawlShard.from_dict(store.read_json(f"{LAYOUT.crawl_shards}/{name}")) for name in names]
    planned = {entry.url_key for shard in shards for entry in shard.entries}
    new_entries = [entry for entry in group_urls(urls) if entry.url_key not in planned]
    for entries in pack_entries(new_entries, shard_size):
        shard = CrawlShard(shard_name(len(shards)), tuple(entries))
        store.write_json(LAYOUT.crawl_shard(shard.shard_id), shard.to_dict())
        shards.append(shard)
    return shards


def plan_redirect_round(
    store: RunStore, shards: list[CrawlShard], round_no: int, shard_size: int
) -> list[CrawlShard]:
    """The shards of redirect round ``round_no`` that the plan does not hold yet: the cross-host
    redirects deferred by the shards of the round before, packed by the host of their targets, and
    stored with the plan (so a rerun plans each once)."""
    planned = {entry.url_key for shard in shards if shard.round == round_no for entry in shard.entries}
    deferred = []
    for shard in shards:
        if shard.round != round_no - 1:
            continue
        entries = {entry.url_key: entry for entry in shard.entries}
        for redirect in committed_redirects(store, shard.shard_id):
            entry = entries[redirect["url_key"]]  # a shard defers only its own url_keys
            if entry.url_key in planned:
                continue
            planned.add(entry.url_key)
            deferred.append(replace(entry, fetch_url=redirect["target"], via=tuple(redirect["via"])))
    new = redirect_round(deferred, shard_size, round_no, first_index=len(shards))
    for shard in new:
        store.write_json(LAYOUT.crawl_shard(shard.shard_id), shard.to_dict())
    return new


def write_manifest(store: RunStore, config: CrawlConfig, shards: list[CrawlShard]) -> None:
    manifest = {
        "stage": LAYOUT.crawl,
        "written_at": datetime.now(UTC).isoformat(),
        "config": config.model_dump(mode="json"),
        "robots_obeyed": config.network.obey_robots,
        "robots_override": None
        if config.network.obey_robots
        else "robots.txt NOT obeyed (network.obey_robots=false)",
        "private_networks_allowed": config.network.allow_private_networks,
        "allowlist": list(config.network.allowlist),
        "replay_warcs": list(config.replay_warcs),
        "shards": len(shards),
        "urls": cited_urls(shards),
    }
    store.write_json(LAYOUT.crawl_manifest, manifest)


def cited_urls(shards: list[CrawlShard]) -> int:
    """The plan's url_keys (a redirect round refetches url_keys of round 0: not counted again)."""
    return sum(len(shard.entries) for shard in shards if shard.round == 0)


def _task_resources(config: CrawlConfig) -> dict[str, float]:
    """The configured custom resources that this cluster has (a missing one would wait forever)."""
    import ray

    available = ray.cluster_resources()
    present = {name: amount for name, amount in config.ray_resources.items() if name in available}
    for name in set(config.ray_resources) - set(present):
        log.warning("cluster has no %r resource; crawl tasks run on any node", name)
    return present


def _run_chain(
    chain: list[CrawlShard], run_uri: str, config: CrawlConfig, pacing: dict[str, HostPacing]
) -> list[dict[str, Any]]:
    """The shards of one host chain, one after another (see ``_run_on_ray``); each starts from the
    pacing of its hosts that the shards before it (and ``pacing``, earlier rounds) left. Each shard's
    process is a fork of this worker's warm zygote (``crawler.launch``), so the host does not wait for
    a process start between two of its shards."""
    summaries: list[dict[str, Any]] = []
    for shard in chain:
        summaries.append(run_shard(shard, run_uri, config, pacing))
        pacing = host_pacing(summaries[-1:], start=pacing)
    return summaries


def _chain_pacing(chain: list[CrawlShard], pacing: dict[str, HostPacing]) -> dict[str, HostPacing]:
    return pacing_for(pacing, {host for shard in chain for host in shard.hosts()})


def _run_on_ray(
    shards: list[CrawlShard],
    run_uri: str,
    config: CrawlConfig,
    ray_address: str | None,
    pacing: dict[str, HostPacing],
) -> list[dict[str, Any]]:
    """One Ray task per host chain (``host_chains``): shards that share a host run one after another.

    A chain holds its CPU from its first shard to its last. Had each shard been its own task, started
    once the one before it was done, every other shard already queued would take the freed CPU first,
    and the hot host, the crawl's critical path, would wait between its shards (measured by
    bench/politeness.py: its 5 shards then took 44 s for 22 s of fetching). The biggest chains go
    first. A retried chain task skips its shards that are done and resumes a partial one; a chain gets
    the two retries per shard that each shard had as a task of its own, so a long chain (a big host on
    preemptible nodes) does not run out of them.
    """
    import ray

    ensure_ray(RayConfig(address=ray_address))
    task = ray.remote(_run_chain)
    placement = {"num_cpus": config.ray_num_cpus, "resources": _task_resources(config) or None}
    refs = [
        task.options(**placement, max_retries=2 * len(chain)).remote(
            chain, run_uri, config, _chain_pacing(chain, pacing)
        )
        for chain in host_chains(shards)
    ]
    return [summary for summaries in ray.get(refs) for summary in summaries]


def host_backlog(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per host, over the shards' summaries: URLs, shards, requests, time spent, pages/s; busiest first.

    ``active_s`` adds up, per shard, the time from the host's first request to its last response: the
    time the crawl spent on that host. Its shards run one after another, so a host whose ``active_s``
    is close to the crawl's wall time is what the crawl waited for.
    """
    hosts: dict[str, dict[str, Any]] = {}
    for summary in summaries:
        for host, stats in summary.get("hosts", {}).items():
            row = hosts.setdefault(
                host, {"host": host, "urls": 0, "shards": 0, "requests": 0, "active_s": 0.0}
            )
            row["urls"] += stats["urls"]
            row["shards"] += 1
            row["requests"] += stats.get("requests", 0)
            row["active_s"] += stats.get("active_s", 0.0)
    for row in hosts.values():
        row["active_s"] = round(row["active_s"], 3)
        row["pages_per_s"] = round(row["urls"] / row["active_s"], 2) if row["active_s"] > 0 else None
    return sorted(hosts.values(), key=lambda row: (-row["active_s"], -row["urls"], row["host"]))


def crawl_run(
    run_uri: str,
    urls: Iterable[str],
    config: CrawlConfig,
    ray_address: str | None = None,
    use_ray: bool = True,
    retry_statuses: Collection[str] = (),
) -> dict[str, Any]:
    """Crawl ``urls`` into the run, one Ray task per host chain; resumes what an earlier call committed.

    The cited URLs are round 0. A redirect to a host its shard does not hold is deferred
    (``politeness.cross_host_redirects``); once a round is done, its deferred targets are planned as the
    next round's shards, packed by host, so that every host is crawled by one chain of shards at a time.

    Args:
        run_uri: The run directory (local path or ``s3://``).
        urls: Cited URLs (duplicates and variant spellings are fetched once).
        config: The crawl configuration (``ray_resources`` pins tasks, e.g. ``{"crawler": 1}``).
        ray_address: A Ray cluster to join; None joins ``$RAY_ADDRESS`` or starts a local Ray.
        use_ray: False runs the shards one after another in this process (debugging).
        retry_statuses: Fetch again the URLs whose committed record has one of these statuses
            (e.g. ``timeout``, ``error``); their old records are replaced, never doubled.

    Returns:
        The run summary (also ``crawl/summary.json``): URLs, shards, rounds, deferred redirects, counts
        by status, pages/s, the CPU seconds of the shard processes run (``shard_cpu_s``, and per page
        fetched), the number of hosts and the ten that took the longest (``busiest_hosts``, see
        ``host_backlog``), the shards the stall watchdog stopped, and those that outlasted
        ``shard_timeout_s`` and went on in another process.
    """
    if unknown := set(retry_statuses) - RETRYABLE_STATUSES:
        raise ValueError(f"cannot retry status {sorted(unknown)}: one of {sorted(RETRYABLE_STATUSES)}")
    store = RunStore(run_uri)
    started = time.monotonic()
    shards = load_plan(store, urls, config.shard_size)
    write_manifest(store, config, shards)
    retried = sum(reopen_shard(store, shard.shard_id, retry_statuses) for shard in shards)
    summaries: list[dict[str, Any]] = []
    ran: set[str] = set()
    round_no = 0
    while True:  # each round's deferred redirects are one hop longer: at most max_redirects + 1 rounds
        if round_no:
            shards += plan_redirect_round(store, shards, round_no, config.shard_size)
        in_round = [s for s in shards if s.round == round_no]
        if not in_round:
            break
        pending = [s for s in in_round if not store.is_done(LAYOUT.crawl, s.shard_id)]
        summaries += [store.done_info(LAYOUT.crawl, s.shard_id) for s in in_round if s not in pending]
        pacing = host_pacing(summaries)  # a host a later round crawls again waits for its delay
        if pending and use_ray:
            summaries += _run_on_ray(pending, run_uri, config, ray_address, pacing)
        else:
            for chain in host_chains(pending):
                summaries += _run_chain(chain, run_uri, config, _chain_pacing(chain, pacing))
        ran.update(shard.shard_id for shard in pending)
        round_no += 1
    statuses: Counter[str] = Counter()
    for summary in summaries:
        statuses.update(summary["statuses"])
    wall = time.monotonic() - started
    fetched = sum(s["urls"] - s.get("deferred_redirects", 0) for s in summaries if s["shard_id"] in ran)
    shard_cpu = sum(s.get("cpu_s", 0.0) for s in summaries if s["shard_id"] in ran)
    result = {
        "run": run_uri,
        "urls": cited_urls(shards),
        "shards": len(shards),
        "shards_run": len(ran),
        "rounds": round_no,
        "deferred_redirects": sum(s.get("deferred_redirects", 0) for s in summaries),
        "statuses": dict(sorted(statuses.items())),
        "wall_s": round(wall, 3),
        "pages_per_s": round(fetched / wall, 2) if wall > 0 else None,
        "shard_cpu_s": round(shard_cpu, 3),
        "shard_cpu_s_per_page": round(shard_cpu / fetched, 4) if fetched else None,
        "robots_obeyed": config.network.obey_robots,
        "stalled_shards": sorted(s["shard_id"] for s in summaries if s.get("stalls")),
        "time_limited_shards": sorted(s["shard_id"] for s in summaries if s.get("time_limit_stops")),
        "retried": retried,
    }
    backlog = host_backlog(summaries)
    result["hosts"] = len(backlog)
    result["busiest_hosts"] = backlog[:10]
    store.write_json(LAYOUT.crawl_hosts, backlog)
    if result["stalled_shards"]:
        log.warning("shards stopped by the stall watchdog: %s", ", ".join(result["stalled_shards"]))
    if result["time_limited_shards"]:
        log.info(
            "shards that outlasted shard_timeout_s (%g s) and went on in a new process: %s",
            config.shard_timeout_s, ", ".join(result["time_limited_shards"]),
        )  # fmt: skip
    store.write_json(LAYOUT.crawl_summary, result)
    return result


def read_url_list(path: str) -> list[str]:
    """URLs from a text file (one per line, ``#`` comments) or JSON lines with a ``url`` field."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read URL list: {exc}") from exc
    urls = []
    jsonl = path.endswith((".jsonl", ".ndjson"))
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if not jsonl:
            urls.append(text)
            continue
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise InputError(path, f"not valid JSON ({exc.msg})", line=number) from exc
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("url"), str)
            or not record["url"].strip()
        ):
            raise InputError(path, "each line needs a non-empty string", line=number, field="url")
        urls.append(record["url"])
    return urls


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run directory: local path or s3://bucket/prefix")
    parser.add_argument("--urls", required=True, help="URL list: .txt (one per line) or .jsonl with 'url'")
    parser.add_argument(
        "--config", help="crawl config YAML (the keys of CrawlConfig, optionally under 'crawl:')"
    )
    parser.add_argument("--render", choices=["never", "auto", "always"], help="JavaScript rendering policy")
    parser.add_argument("--replay", action="append", help="serve from this WARC/ARC file (repeatable)")
    parser.add_argument("--shard-size", type=positive_int, help="URLs per shard")
    parser.add_argument("--ignore-robots", action="store_true", help="do not obey robots.txt (recorded)")
    parser.add_argument(
        "--allow-private-networks", action="store_true", help="allow private/loopback addresses (intranets)"
    )
    parser.add_argument("--allowlist", action="append", help="host or CIDR allowed although private")
    parser.add_argument(
        "--retry-status",
        action="append",
        choices=sorted(RETRYABLE_STATUSES),
        help="fetch again the URLs an earlier run ended with this status (repeatable)",
    )
    add_set_argument(parser, "politeness.per_host_concurrency=2")
    parser.add_argument("--ray-address", help="Ray cluster address (default: $RAY_ADDRESS or a local Ray)")
    parser.add_argument("--no-ray", action="store_true", help="run shards in this process, one after another")


def config_from_args(args: argparse.Namespace) -> CrawlConfig:
    """The config file, with command-line flags applied on top."""
    data = CrawlConfig.from_yaml(args.config).model_dump() if args.config else CrawlConfig().model_dump()
    if args.render:
        data["render"]["policy"] = args.render
    if args.replay:
        data["replay_warcs"] = [*data["replay_warcs"], *args.replay]
    if args.shard_size:
        data["shard_size"] = args.shard_size
    if args.ignore_robots:
        data["network"]["obey_robots"] = False
    if args.allow_private_networks:
        data["network"]["allow_private_networks"] = True
    if args.allowlist:
        data["network"]["allowlist"] = [*data["network"]["allowlist"], *args.allowlist]
    for assignment in args.overrides:
        apply_override(data, assignment)
    return CrawlConfig.from_dict(data, source=args.config or "<command line>")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        config = config_from_args(args)
        urls = read_url_list(args.urls)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with crawl_progress(RunStore(args.run)):
        summary = crawl_run(
            args.run,
            urls,
            config,
            ray_address=args.ray_address,
            use_ray=not args.no_ray,
            retry_statuses=args.retry_status or (),
        )
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    run_module("crawl")
