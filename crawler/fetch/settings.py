"""Scrapy settings of a shard process, derived from one CrawlConfig."""

from __future__ import annotations

from typing import Any

from crawler.config import CrawlConfig
from crawler.fetch.downloader import PACING_SETTING
from crawler.fetch.middlewares import CONFIG_SETTING
from crawler.fetch.pinproxy import PinningProxy
from crawler.fetch.render import PROXY_SETTING, SubresourceGuard
from crawler.shards import HostPacing

_MW = "crawler.fetch.middlewares."


def scrapy_settings(
    config: CrawlConfig,
    guard: SubresourceGuard | None = None,
    proxy: PinningProxy | None = None,
    pacing: dict[str, HostPacing] | None = None,
) -> dict[str, Any]:
    """Settings for ``CrawlerProcess``: politeness, limits, our middlewares, replay or Playwright.

    ``guard`` checks each of Chromium's requests (and records what it blocked); ``proxy`` is where
    Chromium's connections go, to addresses the policy allows only; ``pacing`` is what earlier
    processes left of the hosts' delays (``HostSlotDownloader``; a replay has none).
    """
    polite, limits, render = config.politeness, config.limits, config.render
    settings: dict[str, Any] = {
        CONFIG_SETTING: config.model_dump(mode="json"),
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "USER_AGENT": polite.user_agent,
        "COOKIES_ENABLED": False,
        "CONCURRENT_REQUESTS": polite.total_concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": polite.per_host_concurrency,
        # A page's callback yields no items and at most one request (its render), yet Scrapy starts this
        # many tasks per response to process what it yields: 100 by default, 6 % of a shard's CPU.
        "CONCURRENT_ITEMS": 1,
        "DOWNLOAD_DELAY": polite.download_delay_s,
        "DOWNLOAD_DELAY_JITTER": 0.5 if polite.download_delay_s > 0 else 0,
        "AUTOTHROTTLE_ENABLED": polite.autothrottle,
        "AUTOTHROTTLE_START_DELAY": max(polite.download_delay_s, 0.1),
        "AUTOTHROTTLE_TARGET_CONCURRENCY": min(
            polite.autothrottle_target_concurrency, polite.per_host_concurrency
        ),
        "AUTOTHROTTLE_MAX_DELAY": 30.0,
        "DOWNLOAD_TIMEOUT": limits.timeout_s,
        "DNS_TIMEOUT": min(limits.timeout_s, 20),
        "TWISTED_DNS_RESOLVER": _MW + "GuardedResolver",
        "DOWNLOAD_MAXSIZE": limits.max_bytes,
        "DOWNLOAD_WARNSIZE": 0,
        "REDIRECT_MAX_TIMES": limits.max_redirects,
        "URLLENGTH_LIMIT": 0,  # AddressGuardMiddleware ends a long URL with a reason; Scrapy's drops it
        "RETRY_ENABLED": False,  # replaced by BackoffRetryMiddleware
        "ROBOTSTXT_OBEY": config.network.obey_robots,
        "ROBOTSTXT_PARSER": "scrapy.robotstxt.ProtegoRobotParser",
        "HTTPERROR_ALLOW_ALL": True,
        "LOG_INSTALL_ROOT_HANDLER": True,
        "DOWNLOAD_FAIL_ON_DATALOSS": True,
        "DOWNLOADER": "crawler.fetch.downloader.HostSlotDownloader",
        PACING_SETTING: {} if config.replay_warcs else dict(pacing or {}),
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "REACTOR_THREADPOOL_MAXSIZE": 20,
        "DOWNLOADER_MIDDLEWARES": {
            _MW + "AddressGuardMiddleware": 50,
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            _MW + "PageRobotsMiddleware": 100,
            "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
            _MW + "BackoffRetryMiddleware": 550,
            "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
            _MW + "SizeCapCompressionMiddleware": 590,
            "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
            _MW + "RedirectLimitMiddleware": 600,
            _MW + "WarcRecorderMiddleware": 605,
            "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
        },
        "EXTENSIONS": {"scrapy.extensions.telnet.TelnetConsole": None},
    }
    if config.replay_warcs:
        handler = "crawler.fetch.replay.ReplayDownloadHandler"
        settings["DOWNLOAD_HANDLERS"] = {"http": handler, "https": handler}
        settings["AUTOTHROTTLE_ENABLED"] = False
        settings["DOWNLOAD_DELAY"] = 0
    elif render.policy != "never":
        handler = "crawler.fetch.render.DeadlinePlaywrightHandler"
        settings.update(
            DOWNLOAD_HANDLERS={"http": handler, "https": handler},
            PLAYWRIGHT_BROWSER_TYPE="chromium",
            PLAYWRIGHT_LAUNCH_OPTIONS={
                "executable_path": render.chromium_path,
                "args": [*render.chromium_flags, *(proxy.chromium_flags if proxy else [])],
                "headless": True,
            },
            PLAYWRIGHT_MAX_CONTEXTS=render.max_contexts,
            PLAYWRIGHT_MAX_PAGES_PER_CONTEXT=render.pages_per_context,
            PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT=render.timeout_s * 1000,
            PLAYWRIGHT_ABORT_REQUEST=guard,
            PLAYWRIGHT_CONTEXTS={},
        )
        settings[PROXY_SETTING] = proxy
    return settings
