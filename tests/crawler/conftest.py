"""Crawler fixtures: a loopback web of several hosts and crawl configs that opt into loopback."""

from __future__ import annotations

import pytest

from crawler.config import CrawlConfig
from tests.crawler.loopweb import LoopbackWeb

#: The hosts of the test web; 127.0.0.9 (the probe host) is deliberately NOT allowlisted.
WEB_HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]


def loopback_config(**overrides) -> CrawlConfig:
    """A config that allows exactly the test web's hosts (the SSRF guard stays on for all others)."""
    data = {
        "network": {"allowlist": WEB_HOSTS},
        "limits": {"timeout_s": 3, "retries": 1, "backoff_base_s": 0.2, "max_bytes": 1_000_000},
        "render": {"policy": "never"},
        "politeness": {"autothrottle": False},
        "stall_timeout_s": 60,  # a wedged shard ends with timeout records well before pytest's limit
    }
    for key, value in overrides.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return CrawlConfig.from_dict(data)


@pytest.fixture(scope="module")
def web():
    server = LoopbackWeb(WEB_HOSTS).start()
    yield server
    server.stop()
