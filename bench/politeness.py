"""Politeness benchmark: does a host that spans several shards keep its per-host limit on Ray?

A loopback web of ``--hosts`` hosts (127.0.3.x) answers every request after ``--latency`` seconds and
counts the requests in flight at each host, at the server. One hot host holds ``--hot-share`` of the
``--urls`` URLs, so with ``--shard-size`` it spans several shards; Ray runs shards in parallel
(``--ray-cpus`` logical CPUs). Both crawls fetch the same URLs from the same plan in the same run:

- ours: ``crawl_run``: the shards of a host run one after another (``host_chains``), others beside them;
- baseline: every shard as an independent Ray task, as the crawl ran them before (each shard keeps
  the limit alone, so a host in k parallel shards sees up to k x the limit).

Measured at the server: the most requests in flight at the hot host and at any host, the hot host's
pages/s against its bound (concurrency / latency), and the other hosts' pages/s while the hot host is
being crawled.

Redirect scenario (``--redirect-share``, 0 skips it): the same URLs, but that share of the hot host's
URLs is cited through two link-shortener hosts instead (``/to/<hot>/article/redirected/<n>``, a 302 to
the hot host), so the hot host gets as many page requests, some of them from shards that do not hold it.
It is crawled twice by ``crawl_run``: with ``politeness.cross_host_redirects: defer`` (ours: the targets
are fetched in the next round, by shards of the hot host) and with ``follow`` (the shard that met the
redirect fetches the target, as the crawl did before). The last output line is one JSON object.

    .venv/bin/python bench/politeness.py [--urls 1200] [--hosts 12] [--hot-share 0.34] [--shard-size 100]
        [--redirect-share 0.25]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crawler.config import CrawlConfig  # noqa: E402
from crawler.runner import read_pages, run_shard  # noqa: E402
from crawler.shards import entry_host, plan_shards  # noqa: E402
from jobs.crawl import crawl_run  # noqa: E402
from tests.crawler.loopweb import LoopbackWeb  # noqa: E402


def page_times(web: LoopbackWeb, hosts: list[str]) -> list[float]:
    """Arrival times of page requests (robots.txt left out) at ``hosts``, sorted."""
    wanted = set(hosts)
    return sorted(t for (host, path), times in web.times.items() if host in wanted and path != "/robots.txt"
                  for t in times)  # fmt: skip


def rate(times: list[float], start: float, end: float) -> float | None:
    inside = [t for t in times if start <= t <= end]
    return round(len(inside) / (end - start), 2) if end > start else None


def measure(web: LoopbackWeb, hot: str, others: list[str], urls: int, wall: float, run: str) -> dict:
    """Server-side figures of one crawl; ``others`` are the hosts whose throughput is compared."""
    hot_times, other_times = page_times(web, [hot]), page_times(web, others)
    hot_start, hot_end = hot_times[0], hot_times[-1]
    both_end = min(hot_end, other_times[-1])  # while the hot host and the others are both being crawled
    statuses = read_pages(run).column("status").to_pylist()
    return {
        "max_in_flight_hot_host": web.max_in_flight[hot],
        "max_in_flight_other_hosts": max(web.max_in_flight[host] for host in others),
        "ok_fraction": round(statuses.count("ok") / urls, 4),
        "pages_per_s": round(urls / wall, 2),
        "wall_s": round(wall, 2),
        "hot_host_pages_per_s": rate(hot_times, hot_start, hot_end),
        "other_hosts_pages_per_s_while_hot": rate(other_times, hot_start, both_end),
        "other_hosts_busy_while_hot_s": round(max(0.0, both_end - hot_start), 2),
    }


def crawl(web: LoopbackWeb, urls: list[str], config: CrawlConfig, chained: bool) -> tuple[float, str, dict]:
    import ray

    web.times.clear()
    web.hits.clear()
    web.max_in_flight.clear()
    run = tempfile.mkdtemp(prefix="sbpolite-run")
    started = time.perf_counter()
    if chained:
        summary = crawl_run(run, urls, config)
    else:
        task = ray.remote(run_shard).options(num_cpus=config.ray_num_cpus)
        ray.get([task.remote(shard, run, config) for shard in plan_shards(urls, config.shard_size)])
        summary = {}
    return time.perf_counter() - started, run, summary


def redirect_scenario(
    web: LoopbackWeb,
    urls: list[str],
    hot: str,
    shorteners: list[str],
    others: list[str],
    share: float,
    settings: dict,
) -> dict:
    """The hot host's limit when ``share`` of its URLs arrive through shorteners, ``defer`` and ``follow``."""
    hot_prefix = web.url(hot, "/page/")
    hot_indices = [i for i, url in enumerate(urls) if url.startswith(hot_prefix)]
    chosen = hot_indices[:: max(1, round(1 / share))] if share > 0 else []
    cited = list(urls)
    for n, i in enumerate(chosen):
        cited[i] = web.url(shorteners[n % len(shorteners)], f"/to/{hot}/article/redirected/{n}")
    result: dict = {"redirected_urls": len(chosen), "shortener_hosts": len(shorteners)}
    for mode in ("defer", "follow"):
        politeness = {**settings["politeness"], "cross_host_redirects": mode}
        variant = CrawlConfig.from_dict({**settings, "politeness": politeness})
        wall, run, summary = crawl(web, cited, variant, chained=True)
        try:
            figures = measure(web, hot, others, len(cited), wall, run)
        finally:
            shutil.rmtree(run, ignore_errors=True)
        targets_fetched = sum(n for (host, path), n in web.hits.items()
                              if host == hot and path.startswith("/article/redirected/"))  # fmt: skip
        result[mode] = {
            "max_in_flight_hot_host": figures["max_in_flight_hot_host"],
            "max_in_flight_other_hosts": figures["max_in_flight_other_hosts"],
            "ok_fraction": figures["ok_fraction"],
            "redirect_targets_fetched": targets_fetched,
            "rounds": summary["rounds"],
            "deferred_redirects": summary["deferred_redirects"],
            "pages_per_s": figures["pages_per_s"],
            "wall_s": figures["wall_s"],
        }
        print(f"redirects, {mode}: {json.dumps(result[mode])}", flush=True)
    return result


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "unknown"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")),
                "unknown")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=1200)
    parser.add_argument("--hosts", type=int, default=12)
    parser.add_argument("--hot-share", type=float, default=0.34, help="share of the URLs on the hot host")
    parser.add_argument("--shard-size", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--per-host", type=int, default=2, help="per-host concurrency (politeness)")
    parser.add_argument(
        "--ray-cpus", type=int, default=4, help="logical CPUs of the local Ray (shards at once)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the independent-shards baseline")
    parser.add_argument(
        "--redirect-share", type=float, default=0.25,
        help="share of the hot host's URLs cited through link shorteners (0: no redirect scenario)",
    )  # fmt: skip
    args = parser.parse_args()

    import ray

    hosts = [f"127.0.3.{i + 1}" for i in range(args.hosts)]
    hot, others = hosts[0], hosts[1:]
    shorteners = [f"127.0.3.{args.hosts + i + 1}" for i in range(2)]
    hot_urls = round(args.urls * args.hot_share)
    web = LoopbackWeb(hosts + shorteners, latency_s=args.latency).start()
    urls = [web.url(hot, f"/page/{i}") for i in range(hot_urls)]
    urls += [web.url(others[i % len(others)], f"/page/{i}") for i in range(args.urls - hot_urls)]
    settings = {
        "network": {"allowlist": ["127.0.3.0/24"]},
        "politeness": {"per_host_concurrency": args.per_host, "autothrottle": False},
        "limits": {"timeout_s": 60},
        "render": {"policy": "never"},
        "shard_size": args.shard_size,
    }
    config = CrawlConfig.from_dict(settings)
    shards = plan_shards(urls, args.shard_size)
    hot_shards = sum(any(entry_host(e) == hot for e in shard.entries) for shard in shards)
    temp_dir = tempfile.mkdtemp(prefix="sbray", dir="/tmp")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=args.ray_cpus, include_dashboard=False, _temp_dir=temp_dir, log_to_driver=False)
    runs = []
    try:
        wall, run, summary = crawl(web, urls, config, chained=True)
        runs.append(run)
        ours = measure(web, hot, others, len(urls), wall, run)
        busiest = summary["busiest_hosts"][0]
        print(f"ours: {json.dumps(ours)}; busiest host {json.dumps(busiest)}", flush=True)
        baseline = None
        if not args.no_baseline:
            wall, run, _ = crawl(web, urls, config, chained=False)
            runs.append(run)
            baseline = measure(web, hot, others, len(urls), wall, run)
            print(f"baseline (independent shards): {json.dumps(baseline)}", flush=True)
        redirects = None
        if args.redirect_share > 0:
            redirects = redirect_scenario(web, urls, hot, shorteners, others, args.redirect_share, settings)
    finally:
        ray.shutdown()
        web.stop()
        shutil.rmtree(temp_dir, ignore_errors=True)
        for run in runs:
            shutil.rmtree(run, ignore_errors=True)
    result = {
        "bench": "politeness",
        "urls": len(urls),
        "hosts": len(hosts),
        "hot_host_urls": hot_urls,
        "shard_size": args.shard_size,
        "shards": len(shards),
        "shards_with_hot_host": hot_shards,
        "latency_s": args.latency,
        "per_host_concurrency": args.per_host,
        **{key: value for key, value in ours.items() if key != "wall_s"},
        "redirects": redirects,
        "hot_host_bound_pages_per_s": round(args.per_host / args.latency, 1),
        "other_hosts_bound_pages_per_s": round(len(others) * args.per_host / args.latency, 1),
        "hot_host_active_s": busiest["active_s"],
        "wall_s": ours["wall_s"],
        "baseline_independent_shards": baseline,
        "ray_cpus": args.ray_cpus,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
