"""Per-host politeness inside one shard, as the server sees it: requests in flight and their spacing."""

from __future__ import annotations

import pytest

from crawler.runner import read_pages, run_shard
from crawler.shards import plan_shards
from tests.crawler.conftest import loopback_config
from tests.crawler.loopweb import LoopbackWeb

HOT, OTHERS = "127.0.1.1", ["127.0.1.2", "127.0.1.3", "127.0.1.4"]
DELAYED, GREEDY = "127.0.1.5", "127.0.1.6"  # robots.txt: Crawl-delay 0.5 s / 100 s
HOSTS = [HOT, *OTHERS, DELAYED, GREEDY]


def gaps(times: list[float]) -> list[float]:
    times = sorted(times)
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


def host_times(web: LoopbackWeb, host: str) -> list[float]:
    return [t for (h, _path), times in web.times.items() if h == host for t in times]


@pytest.fixture(scope="module")
def politeweb():
    server = LoopbackWeb(HOSTS, latency_s=0.1, crawl_delays={DELAYED: 0.5, GREEDY: 100}).start()
    yield server
    server.stop()


def crawl(web: LoopbackWeb, urls: list[str], run: str, **politeness) -> dict[str, str]:
    config = loopback_config(  # a generous timeout: a busy test machine must not turn pages into timeouts
        network={"allowlist": ["127.0.1.0/24"]},
        limits={"timeout_s": 20},
        politeness={"autothrottle": False, **politeness},
    )
    (shard,) = plan_shards(urls, shard_size=1000)
    run_shard(shard, run, config)
    return {row["url"]: row["status"] for row in read_pages(run).to_pylist()}


def test_per_host_concurrency_and_crawl_delay_hold_at_the_server(politeweb, tmp_path):
    web = politeweb
    urls = [web.url(HOT, f"/page/{i}") for i in range(40)]
    urls += [web.url(host, f"/article/{i}") for host in OTHERS for i in range(8)]
    urls += [web.url(DELAYED, f"/article/{i}") for i in range(4)]
    urls += [web.url(GREEDY, f"/article/{i}") for i in range(2)]
    statuses = crawl(web, urls, str(tmp_path), per_host_concurrency=2, total_concurrency=64)

    assert {statuses[u] for u in urls if GREEDY not in u} == {"ok"}
    assert max(web.max_in_flight.values()) <= 2, dict(web.max_in_flight)
    assert web.max_in_flight[HOT] == 2  # the limit is used, not just respected
    # Crawl-delay 0.5 s: robots.txt and the 4 pages are sent 0.5 s apart (exact floor, no jitter); the
    # arrival times carry the server's own scheduling noise on a busy machine, hence the tolerance
    delayed = gaps(host_times(web, DELAYED))
    assert len(delayed) == 4 and min(delayed) >= 0.4 and sum(delayed) / 4 >= 0.49, delayed
    # Crawl-delay 100 s is over max_crawl_delay_s (30): the host is not crawled beyond its robots.txt
    assert {statuses[u] for u in urls if GREEDY in u} == {"robots_disallowed"}
    assert host_times(web, GREEDY) == web.times[(GREEDY, "/robots.txt")]


def test_download_delay_spaces_requests_to_one_host(politeweb, tmp_path):
    web = politeweb
    urls = [web.url(OTHERS[0], f"/spaced/{i}") for i in range(6)]
    crawl(web, urls, str(tmp_path), per_host_concurrency=4, download_delay_s=0.4)
    arrivals = [t for (h, path), times in web.times.items() if path.startswith("/spaced/") for t in times]
    assert len(arrivals) == 6
    assert min(gaps(arrivals)) >= 0.4 * 0.5 - 0.05, gaps(arrivals)  # delay randomised 0.5-1.5x
