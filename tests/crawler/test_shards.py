from crawler.shards import CrawlShard, entry_host, host_chains, plan_shards


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


def test_hosts_are_not_split_unless_bigger_than_a_shard():
    urls = [f"https://hot.example/p{i}" for i in range(10)]
    urls += [f"https://h{h}.example/p{i}" for h in range(4) for i in range(2)]
    shards = plan_shards(urls, 4)
    hosts = [{entry_host(e) for e in shard.entries} for shard in shards]
    hot = [shard for shard, names in zip(shards, hosts, strict=True) if "hot.example" in names]
    assert [len(shard.entries) for shard in hot] == [3, 3, 4]  # near-equal shards of its own
    assert all(names == {"hot.example"} for names in hosts if "hot.example" in names)
    small = [names for names in hosts if "hot.example" not in names]
    assert sorted(len(names) for names in small) == [2, 2]  # two small hosts per shard, none split


def test_shards_sharing_a_host_form_one_chain_biggest_first():
    shards = plan_shards([f"https://hot.example/p{i}" for i in range(9)] + ["https://a.example/"], 3)
    later = plan_shards(["https://a.example/new", "https://b.example/"], 3, first_index=len(shards))
    chains = host_chains(shards + later)
    assert [[s.shard_id for s in chain] for chain in chains] == [
        ["shard-00000", "shard-00001", "shard-00002"],  # hot.example: 9 URLs in three shards
        ["shard-00003", "shard-00004"],  # a.example, planned again by a later run
    ]
