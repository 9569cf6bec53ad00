"""Cross-host redirects: deferred by the redirecting shard, fetched in the next round by the target's."""

from __future__ import annotations

from crawler.layout import LAYOUT
from crawler.runner import read_pages
from crawler.storage import RunStore
from jobs.crawl import crawl_run
from tests.crawler.conftest import loopback_config

SHORTENER, TARGET = "127.0.0.4", "127.0.0.5"


def test_redirects_to_another_shards_host_are_fetched_in_the_next_round(web, tmp_path):
    run = str(tmp_path / "run")
    cited = [web.url(SHORTENER, f"/to/{TARGET}/article/r{i}") for i in range(5)]
    urls = cited + [web.url(TARGET, f"/article/d{i}") for i in range(4)]
    config = loopback_config(shard_size=4)  # the shortener spans 2 shards, the target host has its own
    summary = crawl_run(run, urls, config, use_ray=False)

    assert summary["statuses"] == {"ok": 9} and summary["urls"] == 9
    assert summary["rounds"] == 2 and summary["deferred_redirects"] == 5
    rows = {row["url"]: row for row in read_pages(run).to_pylist()}
    assert len(rows) == 9
    for i, url in enumerate(cited):
        assert rows[url]["final_url"] == web.url(TARGET, f"/article/r{i}")
        assert rows[url]["redirect_chain"] == [url] and rows[url]["original_urls"] == [url]
        assert web.hits[(TARGET, f"/article/r{i}")] == 1
        assert web.hits[(SHORTENER, f"/to/{TARGET}/article/r{i}")] == 1

    # a rerun fetches nothing and plans no round twice
    store = RunStore(run)
    shards = store.listdir(LAYOUT.crawl_shards, suffix=".json")
    again = crawl_run(run, urls, config, use_ray=False)
    assert again["shards_run"] == 0 and again["statuses"] == {"ok": 9}
    assert store.listdir(LAYOUT.crawl_shards, suffix=".json") == shards
    assert all(web.hits[(TARGET, f"/article/r{i}")] == 1 for i in range(5))


def test_a_crash_before_the_next_round_is_planned_is_resumed(web, tmp_path):
    run = str(tmp_path / "run")
    cited = [web.url(SHORTENER, f"/to/{TARGET}/article/c{i}") for i in range(3)]
    config = loopback_config(shard_size=10)
    first = crawl_run(run, cited, config, use_ray=False)
    assert first["rounds"] == 2 and first["statuses"] == {"ok": 3}
    store = RunStore(run)
    # undo round 1 as if the job died after round 0: its plan, marker and pages
    for name in store.listdir(LAYOUT.crawl_shards, suffix=".json"):
        shard = store.read_json(f"{LAYOUT.crawl_shards}/{name}")
        if shard.get("round"):
            store.delete(f"{LAYOUT.crawl_shards}/{name}")
            store.forget_done(LAYOUT.crawl, shard["shard_id"])
            for part in store.listdir(LAYOUT.pages, suffix=".parquet"):
                if part.startswith(shard["shard_id"] + "-"):
                    store.delete(LAYOUT.page_part(part))
    assert len(read_pages(run)) == 0
    again = crawl_run(run, cited, config, use_ray=False)
    assert again["statuses"] == {"ok": 3} and len(read_pages(run)) == 3
    assert all(web.hits[(SHORTENER, f"/to/{TARGET}/article/c{i}")] == 1 for i in range(3))  # round 0 kept


def test_a_redirect_within_the_shard_or_with_follow_is_one_round(web, tmp_path):
    urls = [web.url(SHORTENER, f"/to/{TARGET}/article/s0"), web.url(TARGET, "/article/s1")]
    same_shard = crawl_run(str(tmp_path / "a"), urls, loopback_config(shard_size=10), use_ray=False)
    assert same_shard["rounds"] == 1 and same_shard["deferred_redirects"] == 0
    follow = loopback_config(shard_size=1, politeness={"cross_host_redirects": "follow"})
    followed = crawl_run(str(tmp_path / "b"), urls, follow, use_ray=False)
    assert followed["rounds"] == 1 and followed["statuses"] == {"ok": 2}
