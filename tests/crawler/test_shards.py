from crawler.shards import CrawlShard, plan_shards


def test_plan_dedups_by_key_and_keeps_spellings():
    urls = [
        "https://a.com/x?utm_source=s",
        "HTTPS://A.com/x",
        "https://b.com/",
        "https://a.com/x#frag",
        "ftp://nope",
    ]
    shards = plan_shards(urls, shard_size=2)
    assert [s.shard_id for s in shards] == ["shard-00000", "shard-00001"]
    entries = [e for s in shards for e in s.entries]
    assert len(entries) == 3
    first = entries[0]
    assert first.url == "https://a.com/x"
    assert set(first.original_urls) == {
        "https://a.com/x?utm_source=s",
        "HTTPS://A.com/x",
        "https://a.com/x#frag",
    }
    invalid = entries[2]
    assert invalid.invalid and invalid.url == "ftp://nope" and invalid.url_key.startswith("x")


def test_plan_is_deterministic_and_roundtrips():
    urls = [f"https://h{i % 7}.example/p{i}" for i in range(50)]
    one, two = plan_shards(urls, 8), plan_shards(list(urls), 8)
    assert one == two and len(one) == 7
    assert all(CrawlShard.from_dict(s.to_dict()) == s for s in one)
    assert plan_shards(urls, 8, first_index=3)[0].shard_id == "shard-00003"
