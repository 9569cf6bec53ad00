"""``jobs.crawl``: Ray tasks per shard (pinned by a custom resource), stored plan, reruns, S3, CLI errors."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable

import pytest
import yaml

from crawler.layout import LAYOUT
from crawler.runner import read_pages, reopen_shard
from crawler.storage import RunStore
from jobs.cli import main
from jobs.crawl import crawl_run
from tests.crawler.conftest import loopback_config
from tests.crawler.loopweb import LoopbackWeb

A, B = "127.0.0.4", "127.0.0.5"


@pytest.fixture(scope="module")
def local_ray():
    """A private in-process Ray with a ``crawler`` resource (loopback, no token auth, own temp dir)."""
    import ray

    saved = {key: os.environ.pop(key, None) for key in ("RAY_ADDRESS",)}
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if ray.is_initialized():  # a Ray left by an earlier module lacks the crawler resource
        ray.shutdown()
    temp_dir = tempfile.mkdtemp(prefix="sbray", dir="/tmp")
    ray.init(num_cpus=2, resources={"crawler": 2}, include_dashboard=False, _temp_dir=temp_dir)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)
    os.environ.update({key: value for key, value in saved.items() if value is not None})


@pytest.mark.slow
def test_crawl_run_on_ray_then_rerun_with_more_urls(web, local_ray, tmp_path):
    run = str(tmp_path / "run")
    config = loopback_config(shard_size=4, ray_resources={"crawler": 1}, network={"obey_robots": False})
    urls = [web.url(A if i % 2 else B, f"/article/{i}") for i in range(7)] + [web.url(A, "/article/1#dup")]
    summary = crawl_run(run, urls, config)
    assert summary["shards"] == summary["shards_run"] == 2 and summary["urls"] == 7
    assert summary["statuses"] == {"ok": 7}
    store = RunStore(run)
    assert store.done_tasks("crawl") == {"shard-00000", "shard-00001"}
    manifest = store.read_json("crawl/manifest.json")
    assert manifest["robots_obeyed"] is False and "NOT obeyed" in manifest["robots_override"]
    assert web.hits[(A, "/robots.txt")] == 0  # robots.txt was not even fetched

    more = urls + [web.url(B, "/article/100"), web.url(A, "/article/101"), web.url(B, "/article/2")]
    again = crawl_run(run, more, config)
    assert again["shards"] == 3 and again["shards_run"] == 1 and again["urls"] == 9
    table = read_pages(run)
    keys = table.column("url_key").to_pylist()
    assert len(keys) == len(set(keys)) == 9
    assert web.hits[(A, "/article/1")] == 1


def test_crawl_into_s3(web, s3_bucket, tmp_path):
    run = f"s3://{s3_bucket}/audit"
    urls = [web.url(A, "/article/s3-1"), web.url(B, "/article/s3-2"), web.url(A, "/404")]
    summary = crawl_run(run, urls, loopback_config(extract_workers=1), use_ray=False)  # extraction in a pool
    assert summary["statuses"] == {"http_error": 1, "ok": 2}
    # CPU of the shard processes (fetching, the extraction worker they waited for, and the warm-up of
    # their zygote in the summary of its first child)
    store = RunStore(run)
    shards = [store.done_info(LAYOUT.crawl, shard) for shard in store.done_tasks(LAYOUT.crawl)]
    assert all(0 <= shard["process_warm_up_cpu_s"] < shard["cpu_s"] for shard in shards)
    assert all((shard["process_warm_up_cpu_s"] > 0) == (shard["process_forked"] == 1) for shard in shards)
    assert summary["shard_cpu_s"] == round(sum(shard["cpu_s"] for shard in shards), 3)
    assert summary["shard_cpu_s_per_page"] == round(summary["shard_cpu_s"] / 3, 4)
    table = read_pages(run)
    assert table.num_rows == 3 and RunStore(run).listdir("warc", suffix=".warc.gz")


def test_rerun_retries_failed_urls_and_replaces_their_records(web, tmp_path):
    run = str(tmp_path / "run")
    config = loopback_config(network={"obey_robots": False})  # one retry: /recovers fails the first run
    urls = [web.url(A, "/recovers"), web.url(A, "/article/r1"), web.url(B, "/404")]
    assert crawl_run(run, urls, config, use_ray=False)["statuses"] == {"http_error": 2, "ok": 1}
    kept = next(r for r in read_pages(run).to_pylist() if r["status"] == "ok")

    urls_file, config_file = tmp_path / "urls.txt", tmp_path / "crawl.yaml"
    urls_file.write_text("\n".join(urls) + "\n")
    config_file.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    cli = ["crawl", "--run", run, "--urls", str(urls_file), "--config", str(config_file), "--no-ray"]
    cli += ["--retry-status", "http_error"]
    assert main(cli) == 0
    summary = RunStore(run).read_json("crawl/summary.json")
    assert summary["retried"] == 2 and summary["statuses"] == {"http_error": 1, "ok": 2}
    rows = {r["url"]: r for r in read_pages(run).to_pylist()}
    assert len(rows) == 3 and rows[urls[0]]["status"] == "ok" and rows[urls[2]]["status"] == "http_error"
    assert rows[urls[1]] == kept  # an ok record is left as it was
    assert web.hits[(A, "/recovers")] == 3 and web.hits[(A, "/article/r1")] == 1

    again = crawl_run(run, urls, config, use_ray=False, retry_statuses=["timeout"])
    assert again["retried"] == 0 and again["shards_run"] == 0
    with pytest.raises(ValueError, match="cannot retry status \\['ok'\\]"):
        crawl_run(run, urls, config, use_ray=False, retry_statuses=["ok"])


def test_a_reopened_shard_that_crashed_is_resumed_without_the_retry(web, tmp_path):
    """A run killed after it dropped the failed records still ends with one record per URL."""
    run = str(tmp_path / "run")
    config = loopback_config(network={"obey_robots": False})
    urls = [web.url(B, "/500"), web.url(B, "/article/r2")]
    crawl_run(run, urls, config, use_ray=False)
    store = RunStore(run)
    assert reopen_shard(store, "shard-00000", {"http_error"}) == 1 and not store.is_done(
        "crawl", "shard-00000"
    )
    assert [r["status"] for r in read_pages(run).to_pylist()] == ["ok"]
    summary = crawl_run(run, urls, config, use_ray=False)  # the next plain run resumes the shard
    assert summary["statuses"] == {"http_error": 1, "ok": 1} and read_pages(run).num_rows == 2


def test_cli_rejects_bad_url_file(tmp_path, capsys):
    bad = tmp_path / "urls.jsonl"
    bad.write_text('{"url": "https://example.com/"}\n{"link": "https://example.com/b"}\n')
    assert main(["crawl", "--run", str(tmp_path / "run"), "--urls", str(bad), "--no-ray"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "line 2" in err and "'url'" in err
    config = tmp_path / "c.yaml"
    config.write_text("limits: {max_bytes: -5}\n")
    ok_urls = tmp_path / "urls.txt"
    ok_urls.write_text("https://example.com/\n")
    assert (
        main(["crawl", "--run", str(tmp_path / "run"), "--urls", str(ok_urls), "--config", str(config)]) == 2
    )
    assert "limits.max_bytes" in capsys.readouterr().err


def crawl_slow_web_on_ray(
    run: str, hosts: list[str], urls_of: Callable[[LoopbackWeb], list[str]]
) -> tuple[dict, LoopbackWeb]:
    """Crawl ``urls_of(web)`` on the local Ray from a loopback web of ``hosts`` answering in 100 ms,
    6 URLs a shard, 2 requests per host; returns the summary and the stopped web (its counts stay)."""
    web = LoopbackWeb(hosts, latency_s=0.1).start()
    try:
        config = loopback_config(
            shard_size=6, network={"allowlist": ["127.0.2.0/24"]}, politeness={"per_host_concurrency": 2}
        )
        return crawl_run(run, urls_of(web), config), web
    finally:
        web.stop()


@pytest.mark.slow
def test_a_host_spanning_shards_keeps_its_limit_across_the_cluster(local_ray, tmp_path):
    """Four shards of one host on a 2-CPU Ray run one after another; the other hosts run beside them."""
    hot, others = "127.0.2.1", ["127.0.2.2", "127.0.2.3"]

    def urls_of(web: LoopbackWeb) -> list[str]:
        urls = [web.url(hot, f"/page/{i}") for i in range(24)]
        return urls + [web.url(host, f"/article/{i}") for host in others for i in range(6)]

    summary, web = crawl_slow_web_on_ray(str(tmp_path / "run"), [hot, *others], urls_of)
    assert summary["statuses"] == {"ok": 36} and summary["shards"] == 6
    assert max(web.max_in_flight.values()) <= 2, dict(web.max_in_flight)
    busiest = summary["busiest_hosts"][0]
    assert busiest["host"] == hot and busiest["urls"] == 24 and busiest["shards"] == 4
    assert busiest["requests"] >= 24 + 4  # its pages and a robots.txt per shard
    hosts = RunStore(str(tmp_path / "run")).read_json("crawl/hosts.json")
    assert {row["host"] for row in hosts} == {hot, *others} and summary["hosts"] == 3


@pytest.mark.slow
def test_redirects_to_a_host_in_other_shards_keep_its_limit_across_the_cluster(local_ray, tmp_path):
    """Two shorteners' shards redirect to a host that has its own shards; on Ray the targets wait for the
    next round and its chain, so the host never sees more than its limit (``follow`` saw 4-6 of 2 in
    bench/politeness.py)."""
    hot, shorteners = "127.0.2.1", ["127.0.2.4", "127.0.2.5"]

    def urls_of(web: LoopbackWeb) -> list[str]:
        cited = [web.url(host, f"/to/{hot}/article/{host}-{i}") for host in shorteners for i in range(6)]
        return [web.url(hot, f"/page/{i}") for i in range(12)] + cited

    summary, web = crawl_slow_web_on_ray(str(tmp_path / "run"), [hot, *shorteners], urls_of)
    assert summary["statuses"] == {"ok": 24} and summary["urls"] == 24
    assert summary["rounds"] == 2 and summary["deferred_redirects"] == 12
    assert web.max_in_flight[hot] <= 2, dict(web.max_in_flight)
    targets = {
        path: n for (host, path), n in web.hits.items() if host == hot and path.startswith("/article/")
    }
    assert len(targets) == 12 and set(targets.values()) == {1}
