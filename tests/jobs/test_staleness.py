"""What a rerun redoes: settings mapped to page statuses, failed judgments found and dropped."""

from __future__ import annotations

import pyarrow as pa

from crawler.config import CrawlConfig
from crawler.storage import RunStore
from jobs.staleness import changed_settings, drop_judgments, statuses_for, unresolved_judgments


def test_a_network_policy_change_refetches_refused_pages_only():
    old = CrawlConfig().model_dump(mode="json")
    new = CrawlConfig.from_dict({"network": {"allowlist": ["127.0.0.1"]}}).model_dump(mode="json")
    changed = changed_settings(old, new)
    assert changed == ["network.allowlist"]
    assert statuses_for(changed) == ({"blocked_address"}, [])


def test_settings_that_decide_no_status_are_reported():
    statuses, unmapped = statuses_for(["network.obey_robots", "politeness.user_agent", "render.policy"])
    assert statuses == {"robots_disallowed", "too_short"} and unmapped == ["politeness.user_agent"]


def _part(store: RunStore, name: str, rows: list[tuple[str, str]]) -> None:
    keys, statuses = zip(*rows, strict=True)
    store.write_table(f"judgments/{name}.parquet", pa.table({"judgment_key": keys, "status": statuses}))


def test_error_judgments_stay_stale_until_judged_again(tmp_path):
    store = RunStore(str(tmp_path))
    _part(store, "part-1", [("k1", "scored"), ("k2", "error"), ("k3", "error"), ("k4", "unscorable")])
    assert unresolved_judgments(store, {"error"}) == 2
    _part(store, "part-2", [("k2", "scored")])  # a rerun judged k2
    assert unresolved_judgments(store, {"error"}) == 1
    assert unresolved_judgments(store, {"error", "unscorable"}) == 2


def test_dropping_judgments_rewrites_parts_without_them(tmp_path):
    store = RunStore(str(tmp_path))
    _part(store, "part-1", [("k1", "scored"), ("k4", "unscorable")])
    _part(store, "part-2", [("k5", "unscorable")])
    assert drop_judgments(store, {"unscorable"}) == 2
    assert store.listdir("judgments", suffix=".parquet") == ["part-1.parquet"]
    assert store.read_table("judgments")["judgment_key"].to_pylist() == ["k1"]
    assert drop_judgments(store, None) == 1 and not store.listdir("judgments", suffix=".parquet")
