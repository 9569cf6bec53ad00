"""Crawl benchmark: our crawler against the official pipeline's serial requests + BeautifulSoup fetch.

A loopback web of ``--hosts`` hosts (127.0.1.x) answers every request after ``--latency`` seconds.
Both crawlers fetch the same URLs in the same run:

- baseline: ``requests.get`` + ``BeautifulSoup(html).get_text()``, one URL after another (a sample of
  ``--baseline-sample`` URLs; its pages/s is what it would keep up on the whole list);
- ours: ``crawl_run`` (one Ray task running one Scrapy shard subprocess with full extraction:
  main text, metadata, signals), politeness ``--per-host`` concurrent requests per host.

``bound_fraction`` = our pages/s / (hosts x per-host concurrency / latency), the most a polite crawler
could do. Also measured (``bench/extract.py``'s function): extraction pages/s on one core over the shared
real pages (``../shared/data/pages``, full metadata and signals). The last output line is one JSON object.

``crawl_cpu_s_per_page`` is the CPU time of the shard processes per page (fetching, extraction, the
extraction workers and browsers they waited for, and the warm-up of each worker's zygote they are forked
from, once per zygote; not Ray's or this driver's), ``crawl_cpu_core_hours_per_1m_pages`` the same for a
million pages at this run's ``--shard-size``; with ``--pages shared`` it is what a crawl of real pages
costs. ``shard_warm_up_cpu_s`` is the zygotes' warm-up per shard.

    .venv/bin/python bench/crawl.py [--urls 2000] [--hosts 20] [--latency 0.2] [--pages synthetic|shared]
        [--shard-size N]
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
SHARED_PAGES = REPO.parent / "shared" / "data" / "pages"
sys.path.insert(0, str(REPO))

from bench.extract import extraction_rate, shared_pages, warmup_pages  # noqa: E402
from crawler.config import CrawlConfig  # noqa: E402
from crawler.layout import LAYOUT  # noqa: E402
from crawler.storage import RunStore  # noqa: E402


def start_web(hosts: list[str], latency: float, pages: str) -> tuple[subprocess.Popen, int]:
    """The loopback web in its own process (so that it does not share a GIL with either crawler)."""
    command = [sys.executable, str(REPO / "tests/crawler/loopweb.py"), "--hosts", ",".join(hosts),
               "--latency", str(latency)]  # fmt: skip
    if pages == "shared":
        command += [
            "--pages",
            str(SHARED_PAGES / "aeb/html"),
            "--pages",
            str(SHARED_PAGES / "trafilatura/html"),
        ]
    web = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = web.stdout.readline()
    if not line.startswith("READY"):
        web.kill()
        raise RuntimeError(f"loopback web did not start: {line!r}")
    return web, int(line.split()[1])


def baseline(urls: list[str]) -> float:
    """Pages per second of serial requests + BeautifulSoup get_text (the official approach)."""
    import requests
    from bs4 import BeautifulSoup

    session = requests.Session()
    started = time.perf_counter()
    for url in urls:
        response = session.get(url, timeout=30)
        BeautifulSoup(response.text, "html.parser").get_text()
    return len(urls) / (time.perf_counter() - started)


def ours(urls: list[str], hosts: list[str], per_host: int, run: str, shard_size: int) -> tuple[float, dict]:
    import ray

    from jobs.crawl import crawl_run

    config = CrawlConfig.from_dict(
        {
            "network": {"allowlist": hosts, "obey_robots": True},
            "politeness": {"per_host_concurrency": per_host, "autothrottle": False, "total_concurrency": 512},
            "render": {"policy": "never"},
            "shard_size": shard_size,
            "flush_every": 500,
        }
    )
    temp_dir = tempfile.mkdtemp(prefix="sbbench", dir="/tmp")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, log_to_driver=False)
    try:
        started = time.perf_counter()
        summary = crawl_run(run, urls, config)
        wall = time.perf_counter() - started
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
    return len(urls) / wall, summary


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--per-host", type=int, default=2, help="our per-host concurrency (politeness)")
    parser.add_argument("--baseline-sample", type=int, default=60)
    parser.add_argument(
        "--shard-size",
        type=int,
        default=0,
        help="URLs per shard (0: all in one shard); each shard process pays its start-up once",
    )
    parser.add_argument(
        "--pages",
        choices=["synthetic", "shared"],
        default="synthetic",
        help="served pages: small synthetic articles (1.5 KB), or the shared real pages (cycled)",
    )
    args = parser.parse_args()

    hosts = [f"127.0.1.{i + 1}" for i in range(args.hosts)]
    web, port = start_web(hosts, args.latency, args.pages)
    run = tempfile.mkdtemp(prefix="sbbench-run")
    try:
        urls = [f"http://{hosts[i % len(hosts)]}:{port}/page/{i}" for i in range(args.urls)]
        step = max(1, len(urls) // args.baseline_sample)
        base_rate = baseline(urls[::step][: args.baseline_sample])
        print(f"baseline (serial requests + BeautifulSoup): {base_rate:.2f} pages/s", flush=True)
        shard_size = args.shard_size or len(urls)
        our_rate, summary = ours(urls, hosts, args.per_host, run, shard_size)
        store = RunStore(run)
        shard_summaries = [store.done_info(LAYOUT.crawl, t) for t in store.done_tasks(LAYOUT.crawl)]
        bound = len(hosts) * args.per_host / args.latency
        print(f"ours: {our_rate:.1f} pages/s over {len(urls)} URLs; politeness bound {bound:.0f} pages/s; "
              f"statuses {summary['statuses']}", flush=True)  # fmt: skip
    finally:
        web.kill()
        shutil.rmtree(run, ignore_errors=True)
    extraction = extraction_rate(shared_pages(), warmup_pages())
    print(f"extraction on {extraction['pages']} shared pages: {extraction['rate']} pages/s/core "
          f"(first pass {extraction['first_pass']})", flush=True)  # fmt: skip
    result = {
        "bench": "crawl",
        "urls": len(urls),
        "hosts": len(hosts),
        "latency_s": args.latency,
        "per_host_concurrency": args.per_host,
        "pages": args.pages,
        "baseline_pages_per_s": round(base_rate, 2),
        "ours_pages_per_s": round(our_rate, 1),
        "politeness_bound_pages_per_s": round(bound, 1),
        "speedup": round(our_rate / base_rate, 2),
        "bound_fraction": round(our_rate / bound, 3),
        "ok_fraction": round(summary["statuses"].get("ok", 0) / len(urls), 4),
        "shard_size": shard_size,
        "shards": summary["shards"],
        "crawl_cpu_s_per_page": summary["shard_cpu_s_per_page"],
        "crawl_cpu_core_hours_per_1m_pages": round(summary["shard_cpu_s_per_page"] * 1e6 / 3600, 2),
        "shard_warm_up_cpu_s": round(
            sum(s["process_warm_up_cpu_s"] for s in shard_summaries) / len(shard_summaries), 3
        ),
        "extraction_pages_per_s_per_core": extraction["rate"],
        "extraction_first_pass_pages_per_s_per_core": extraction["first_pass"],
        "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
