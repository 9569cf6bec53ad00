"""What a shard process does: warm up (in the zygote it is forked from) and crawl one spec.

The spec names the run, the shard's remaining entries, the config, the first part number, the pacing that
earlier processes left for the shard's hosts, where to write a small JSON report, and the file the
downloader keeps its hosts' timing in while it runs (what a process that dies leaves). Processes are
forked from a warmed-up zygote (``crawler.fetch.zygote``, ``crawler.launch.ShardProcess``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import sys
import time
from typing import Any

from scrapy.settings import BaseSettings

from crawler.stagetimes import cpu_seconds


def peak_rss_mb() -> float:
    """Peak resident memory of this process since it started this program, in MB.

    ``VmHWM`` of the current address space: Linux keeps ``ru_maxrss`` across ``execve``, so a shard
    process forked from a large parent (a test session, a Ray worker) would report the parent's size.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


#: A dotted path to a class, as Scrapy's settings name components (``package.module.ClassName``).
_COMPONENT_PATH = re.compile(r"(?:[a-z_][a-z0-9_]*\.)+[A-Z][A-Za-z0-9_]*")

#: Text enough for the language identifier (100 characters), so that warming up loads its model.
_WARM_UP_PAGE = (
    b"<html><head><title>Warm-up</title></head><body><p>"
    + b"This page is extracted once before the shard starts, to load what extraction needs. " * 3
    + b"</p></body></html>"
)


def warm_up() -> None:
    """Import what a crawl needs, extract one page (the language model and the extractors' settings
    load on first use), have dateparser compile its patterns, load Scrapy's components and write one
    page record, without installing a Twisted reactor (``CrawlerProcess`` installs the one the settings
    name) or starting a thread (the zygote is forked)."""
    import io
    from datetime import UTC, datetime

    import pyarrow.parquet as pq
    import scrapy.crawler  # noqa: F401
    from htmldate.extractors import external_date_parser

    import crawler.fetch.pinproxy
    import crawler.fetch.render
    import crawler.fetch.spider  # noqa: F401
    from crawler.config import CrawlConfig
    from crawler.extract import extract_page
    from crawler.fetch.settings import scrapy_settings
    from crawler.records import page_record, records_to_table

    content = extract_page("https://example.com/warm-up", _WARM_UP_PAGE, "text/html")
    # A string no locale claims: dateparser compiles every locale's patterns (1.7 s of CPU) and keeps no
    # other state (htmldate's parser does not try previous locales first), so no later answer changes.
    external_date_parser("21. juni/lipanj, 2020", "%Y-%m-%d")
    _load_components(scrapy_settings(CrawlConfig()))
    record = page_record(
        "https://example.com/warm-up", status="ok", fetched_at=datetime.now(UTC), content=content
    )
    pq.write_table(records_to_table([record]), io.BytesIO())  # pyarrow loads pandas on first use
    if "twisted.internet.reactor" in sys.modules:
        raise RuntimeError("warming up installed a Twisted reactor; forked shard processes cannot use it")


def _load_components(settings: dict[str, Any]) -> None:
    """Import every class Scrapy's settings (its defaults and ``settings``) name, as a crawler would
    (0.4 s of imports in each process otherwise); one that does not import is left to the crawl."""
    from scrapy.settings import Settings
    from scrapy.utils.misc import load_object

    paths: set[str] = set()
    for _name, value in Settings(settings).items():
        if isinstance(value, BaseSettings | dict):
            paths.update(str(key) for key in value)
            paths.update(str(item) for item in value.values() if isinstance(item, str))
        elif isinstance(value, str):
            paths.add(value)
    for path in sorted(paths):
        if _COMPONENT_PATH.fullmatch(path):
            try:
                load_object(path)
            except Exception:  # noqa: BLE001, S112 - an optional dependency; the crawl reports it if used
                continue


def crawl_shard(spec_path: str, timing: dict[str, float]) -> int:
    """Crawl the shard of the spec; ``timing`` (the zygote's warm-up, counted in its first child only,
    and readiness) goes into the report."""
    with open(spec_path) as handle:
        spec = json.load(handle)

    from scrapy.crawler import CrawlerProcess

    from crawler.config import CrawlConfig
    from crawler.fetch.downloader import CHECKPOINT_SETTING, host_report
    from crawler.fetch.pinproxy import PinningProxy
    from crawler.fetch.render import SubresourceGuard
    from crawler.fetch.settings import scrapy_settings
    from crawler.fetch.sink import PartSink
    from crawler.fetch.spider import PageSpider
    from crawler.shards import CrawlShard
    from crawler.storage import RunStore

    config = CrawlConfig.model_validate(spec["config"])
    shard = CrawlShard.from_dict(spec["shard"])
    store = RunStore(spec["run_uri"])
    sink = PartSink(
        store,
        shard.shard_id,
        spec["first_seq"],
        config.flush_every,
        flush_bytes=64 * 1024 * 1024,
        warc_compression_level=config.warc_compression_level,
    )
    guard = SubresourceGuard(config.network.address_policy())
    renders = config.render.policy != "never" and not config.replay_warcs
    proxy = PinningProxy(config.network.address_policy()) if renders else None
    started = time.monotonic()
    settings = scrapy_settings(config, guard, proxy, spec.get("host_pacing"))
    settings[CHECKPOINT_SETTING] = spec.get("pacing_checkpoint")
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(PageSpider)

    def write_report(stalled: str | None = None) -> None:
        stats = crawler.stats.get_stats() if crawler.stats else {}
        report = {
            "fetched": len(sink.done),
            "parts": sink.parts,
            "wall_s": round(time.monotonic() - started, 3),
            "peak_rss_mb": peak_rss_mb(),
            "cpu_s": round(cpu_seconds() + timing["warm_up_cpu_s"], 3),
            "render_blocked_requests": [*guard.blocked, *(proxy.blocked if proxy else [])][:100],
            "render_blocked_count": len(guard.blocked) + len(proxy.blocked if proxy else []),
            "render_contexts_opened": stats.get("playwright/context_count", 0),
            "render_contexts_max_open": stats.get("playwright/context_count/max_concurrent", 0),
            "stalled": stalled,
            "time_limited": getattr(crawler.spider, "time_limited", False),
            **timing,
            "hosts": host_report(getattr(crawler.spider, "timings", {})),
        }
        with open(spec["report_path"], "w") as handle:
            json.dump(report, handle)

    def exit_stalled(reason: str) -> None:
        # Every record is committed; a wedged engine would never finish closing, so leave now
        # (the Playwright driver and its browser end with their closed pipe).
        write_report(stalled=reason)
        logging.shutdown()
        os._exit(0)

    process.crawl(crawler, entries=list(shard.entries), config=config, sink=sink, on_stall=exit_stalled)
    process.start()
    write_report()
    time_limited = getattr(crawler.spider, "time_limited", False)  # the rest is for the next process
    return 0 if time_limited or len(sink.done) >= len(shard.entries) else 3  # 3: it did not run to its end
