"""Per-host politeness as the server sees it: requests in flight and their spacing, inside one shard and
from one shard process of a host to the next."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler.layout import LAYOUT
from crawler.runner import host_pacing, read_pages, run_shard
from crawler.shards import plan_shards
from jobs.crawl import crawl_run
from tests.crawler.conftest import loopback_config
from tests.crawler.loopweb import LoopbackWeb

REPO = Path(__file__).resolve().parents[2]
HOT, OTHERS = "127.0.1.1", ["127.0.1.2", "127.0.1.3", "127.0.1.4"]
DELAYED, GREEDY = "127.0.1.5", "127.0.1.6"  # robots.txt: Crawl-delay 0.5 s / 100 s
PACED = "127.0.1.7"  # robots.txt: Crawl-delay 5 s, longer than a shard process takes to start (2-3 s)
HOSTS = [HOT, *OTHERS, DELAYED, GREEDY, PACED]


def gaps(times: list[float]) -> list[float]:
    times = sorted(times)
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


def host_times(web: LoopbackWeb, host: str) -> list[float]:
    return [t for (h, _path), times in web.times.items() if h == host for t in times]


@pytest.fixture(scope="module")
def politeweb():
    server = LoopbackWeb(HOSTS, latency_s=0.1, crawl_delays={DELAYED: 0.5, GREEDY: 100, PACED: 5}).start()
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


@pytest.mark.slow
def test_crawl_delay_holds_from_a_hosts_shard_to_its_next_one_and_its_next_round(politeweb, tmp_path):
    """Two shards of one host run in two processes one after another, then a redirect round crawls the
    host again: each process waits for the host's Crawl-delay since the last request of the one before
    (a process start, 2-3 s, is shorter), robots.txt requests included."""
    web = politeweb
    urls = [web.url(PACED, "/article/0"), web.url(PACED, "/article/1")]
    urls.append(web.url(OTHERS[1], f"/to/{PACED}/article/redirected"))  # deferred to round 1
    config = loopback_config(network={"allowlist": ["127.0.1.0/24"]}, limits={"timeout_s": 20}, shard_size=1)
    summary = crawl_run(str(tmp_path), urls, config, use_ray=False)

    assert summary["statuses"] == {"ok": 3} and summary["rounds"] == 2, summary
    assert len(web.times[(PACED, "/robots.txt")]) == 3  # one per shard process
    arrivals = host_times(web, PACED)
    assert len(arrivals) == 6 and min(gaps(arrivals)) >= 4.9, gaps(arrivals)
    paced = next(row for row in summary["busiest_hosts"] if row["host"] == PACED)
    assert paced["shards"] == 3
    # each shard's process is a fork of this process's zygote: only its first child pays the warm-up
    markers = [json.loads(m.read_text()) for m in (tmp_path / "crawl" / "_done").glob("*.json")]
    forks = sorted((m["process_forked"], m["process_warm_up_cpu_s"]) for m in markers if PACED in m["hosts"])
    assert len({n for n, _cpu in forks}) == 3 and all((cpu > 0) == (n == 1) for n, cpu in forks), forks


@pytest.mark.slow
def test_autothrottles_learned_delay_carries_from_a_hosts_shard_to_its_next_one(politeweb, tmp_path):
    """AutoThrottle learns a delay of latency / target concurrency (0.1 s / 0.0125 = 8 s) from the
    host's first response; the host's next shard process starts there, not at the start delay (0.1 s):
    its robots.txt comes 8 s after the last request of the process before, not one process start."""
    web, host = politeweb, OTHERS[2]
    started = time.monotonic()
    urls = [web.url(host, f"/article/learned-{i}") for i in range(2)]
    politeness = {"autothrottle": True, "autothrottle_target_concurrency": 0.0125}
    config = loopback_config(
        network={"allowlist": ["127.0.1.0/24"]}, limits={"timeout_s": 20}, politeness=politeness, shard_size=1
    )
    summary = crawl_run(str(tmp_path), urls, config, use_ray=False)

    assert summary["statuses"] == {"ok": 2}, summary
    arrivals = [t for t in host_times(web, host) if t >= started]
    assert len(arrivals) == 4 and min(gaps(arrivals)) >= 7.9, gaps(arrivals)  # 2 x (robots.txt, page)
    markers = sorted((tmp_path / "crawl" / "_done").glob("*.json"))
    learned = [json.loads(marker.read_text())["hosts"][host]["delay_s"] for marker in markers]
    assert len(learned) == 2 and all(8.0 <= d <= 30.0 for d in learned), learned


def test_host_pacing_keeps_each_hosts_latest_request_and_delay_and_largest_crawl_delay():
    summaries = [
        {
            "hosts": {
                "a": {"last_sent_at": 100.0, "crawl_delay_s": 5.0, "delay_s": 6.0},
                "b": {"last_sent_at": 0.0},
            }
        },
        {
            "hosts": {
                "a": {"last_sent_at": 90.0, "crawl_delay_s": None, "delay_s": 9.0},
                "c": {"last_sent_at": 50.0},
            }
        },
        {"shard_id": "an old summary, from before pacing was recorded", "hosts": {"d": {"urls": 3}}},
    ]
    assert host_pacing(summaries) == {  # b sent nothing, d's summary says nothing: nothing to wait for
        "a": {"last_sent_at": 100.0, "crawl_delay_s": 5.0, "delay_s": 6.0},  # 9 s was learned before
        "c": {"last_sent_at": 50.0, "crawl_delay_s": None, "delay_s": None},
    }


def test_a_shard_process_that_dies_counts_as_a_request_to_each_of_its_hosts_when_it_ended(tmp_path):
    """It wrote no report, so the retry (and the host's next shard) waits as if it sent one then."""
    (shard,) = plan_shards(["http://127.0.1.7/article/0", "http://127.0.1.8/article/0"], shard_size=10)
    config = loopback_config(  # killed while it warms up: no report
        network={"allowlist": ["127.0.1.0/24"]}, shard_timeout_s=0.2, shard_stop_grace_s=0
    )
    before = time.time()
    summary = run_shard(
        shard, str(tmp_path), config, {"127.0.1.7": {"last_sent_at": 1.0, "crawl_delay_s": 5.0}}
    )

    assert summary["attempts"] == 2 and summary["statuses"] == {"error": 2}
    paced = host_pacing([summary])
    assert paced["127.0.1.7"]["crawl_delay_s"] == 5.0 and paced["127.0.1.8"]["crawl_delay_s"] is None
    assert all(before < p["last_sent_at"] <= time.time() for p in paced.values()), paced


@pytest.mark.slow
def test_a_dying_process_leaves_the_crawl_delay_it_read_to_its_retry(tmp_path):
    """The first process of a host reads robots.txt (Crawl-delay 25 s) and is killed while its page
    waits; its retry knows the delay from the process's checkpoint, so it does not ask for robots.txt
    again after one process start, and the host's next shard gets the delay too."""
    host = "127.0.1.9"
    web = LoopbackWeb([host], crawl_delays={host: 25}).start()
    try:
        (shard,) = plan_shards([web.url(host, "/article/0")], shard_size=10)
        config = loopback_config(
            network={"allowlist": ["127.0.1.0/24"]}, shard_timeout_s=10, shard_stop_grace_s=0
        )
        summary = run_shard(shard, str(tmp_path), config)
    finally:
        web.stop()

    assert summary["attempts"] == 2 and summary["statuses"] == {"error": 1}, summary
    assert len(web.times[(host, "/robots.txt")]) == 1, web.times
    assert summary["hosts"][host]["crawl_delay_s"] == 25 and summary["hosts"][host]["requests"] == 1


def test_a_crawl_delay_that_outlasts_the_shard_time_limit_costs_no_url(tmp_path):
    """A host whose Crawl-delay makes its shard take longer than ``shard_timeout_s``: each process stops
    sending at the limit, commits what it fetched and leaves the rest to a new one, which waits out the
    delay since the last request; every URL ends ok, each requested once (a response 0.8 s long is most
    likely in flight at the limit: it is committed, not fetched again), never two requests to the host
    closer than its Crawl-delay."""
    host = "127.0.1.10"
    web = LoopbackWeb([host], latency_s=0.8, crawl_delays={host: 1.0}).start()
    try:
        urls = [web.url(host, f"/article/{i}") for i in range(6)]
        config = loopback_config(
            network={"allowlist": ["127.0.1.0/24"]}, politeness={"autothrottle": False}, shard_timeout_s=2.5
        )
        run = crawl_run(str(tmp_path), urls, config, use_ray=False)
    finally:
        web.stop()

    (marker,) = (tmp_path / "crawl" / "_done").glob("*.json")
    summary = json.loads(marker.read_text())
    statuses = {row["url"]: row["status"] for row in read_pages(str(tmp_path)).to_pylist()}
    assert statuses == dict.fromkeys(urls, "ok"), summary
    assert run["time_limited_shards"] == [summary["shard_id"]]
    assert summary["time_limit_stops"] >= 1 and summary["attempts"] >= 2
    assert summary["failures"] == [] and summary["statuses"] == {"ok": 6}
    assert all(len(web.times[(host, f"/article/{i}")]) == 1 for i in range(6)), web.times
    assert min(gaps(host_times(web, host))) >= 0.98, gaps(host_times(web, host))


def test_a_shard_whose_processes_commit_nothing_before_the_time_limit_ends(tmp_path):
    """Crawl-delay 30 s against a 2 s time limit: two processes in a row commit nothing, and the shard's
    URLs end as error with the reason, instead of a process after process."""
    host = "127.0.1.11"
    web = LoopbackWeb([host], crawl_delays={host: 30}).start()
    try:
        (shard,) = plan_shards([web.url(host, "/article/0"), web.url(host, "/article/1")], shard_size=10)
        config = loopback_config(network={"allowlist": ["127.0.1.0/24"]}, shard_timeout_s=2)
        summary = run_shard(shard, str(tmp_path), config)
    finally:
        web.stop()

    assert summary["attempts"] == summary["time_limit_stops"] == 2 and summary["statuses"] == {"error": 2}
    errors = {row["error"] for row in read_pages(str(tmp_path)).to_pylist()}
    reason = "two shard processes in a row committed nothing within shard_timeout_s (2 s)"
    assert errors == {f"crawler failed: {reason}"}
    assert len(web.times[(host, "/robots.txt")]) == 1 and (host, "/article/0") not in web.times


_LOST_RUNNER = """
import json, sys
from crawler.config import CrawlConfig
from crawler.runner import run_shard
from crawler.shards import CrawlShard
spec = json.loads(sys.argv[1])
run_shard(CrawlShard.from_dict(spec["shard"]), spec["run"], CrawlConfig.model_validate(spec["config"]))
"""


@pytest.mark.slow
def test_a_retry_after_a_lost_runner_starts_from_the_pacing_its_process_checkpointed(tmp_path):
    """A Ray task whose node is lost takes its shard's runner and process with it, and Ray retries it
    elsewhere: here the runner is a process of its own, killed (its shard process dies with it) after
    robots.txt gave a Crawl-delay of 25 s. The retry reads the checkpoint in the run, so its first
    request (robots.txt again: a new process reads it) waits 25 s from the moment the lost attempt may
    last have sent one, as every request after it does; once done, the checkpoint is gone and the
    summary holds the pacing. Without the checkpoint in the run, the retry's robots.txt came 3 s after."""
    host = "127.0.1.10"
    web = LoopbackWeb([host], crawl_delays={host: 25}).start()
    run = str(tmp_path / "run")
    try:
        (shard,) = plan_shards([web.url(host, "/article/0")], shard_size=10)
        config = loopback_config(network={"allowlist": ["127.0.1.0/24"]}, limits={"timeout_s": 20})
        spec = {"shard": shard.to_dict(), "run": run, "config": config.model_dump(mode="json")}
        runner = subprocess.Popen([sys.executable, "-c", _LOST_RUNNER, json.dumps(spec)], cwd=REPO)
        checkpoint = Path(run) / LAYOUT.crawl_pacing(shard.shard_id)
        deadline = time.monotonic() + 60
        while not (checkpoint.exists() and json.loads(checkpoint.read_text())["hosts"].get(host, {}).get(
            "crawl_delay_s"
        )):  # fmt: skip
            assert runner.poll() is None and time.monotonic() < deadline, "no checkpoint of the Crawl-delay"
            time.sleep(0.1)
        runner.kill()
        runner.wait()
        lost_at = time.monotonic()  # the clock the server records with
        time.sleep(1)  # its shard process dies with it (PR_SET_PDEATHSIG)
        summary = run_shard(shard, run, config)
    finally:
        web.stop()

    assert summary["statuses"] == {"ok": 1} and summary["attempts"] == 1, summary
    first, retried = sorted(web.times[(host, "/robots.txt")])
    assert retried - lost_at >= 24.9, retried - lost_at
    assert all(gap >= 24.9 for gap in gaps(host_times(web, host))), gaps(host_times(web, host))
    assert summary["hosts"][host]["crawl_delay_s"] == 25
    assert not checkpoint.exists()
