"""The run layout: part names parse back to their shard and number, markers sit under ``_done``."""

from __future__ import annotations

import posixpath
from dataclasses import fields

from crawler.layout import LAYOUT


def test_page_and_warc_parts_name_their_shard_and_number():
    stem = LAYOUT.part_stem("shard-00012", 7)
    assert LAYOUT.page_part(f"{stem}.parquet") == "pages/shard-00012-00007.parquet"
    assert LAYOUT.warc_part(stem) == "warc/shard-00012-00007.warc.gz"
    assert LAYOUT.part_of(f"{stem}.parquet") == ("shard-00012", 7)
    assert LAYOUT.part_of(f"{stem}.warc.gz") == ("shard-00012", 7)
    assert LAYOUT.shard_of_page_part(f"{stem}.parquet") == "shard-00012"
    assert LAYOUT.shard_of_page_part(f"{stem}.warc.gz") is None  # a WARC part is not a judge unit
    assert LAYOUT.crawl_redirect_part(stem) == "crawl/redirects/shard-00012-00007.json"
    assert LAYOUT.part_of(f"{stem}.json") == ("shard-00012", 7)  # its deferred redirects
    assert LAYOUT.shard_of_page_part(f"{stem}.json") is None
    for other in ("part-00000.parquet", "shard-1.parquet", "shard-00001-00000.csv"):
        assert LAYOUT.part_of(other) is None


def test_markers_of_every_stage_sit_under_its_done_folder():
    assert LAYOUT.crawl_marker("shard-00001") == "crawl/_done/shard-00001.json"
    assert LAYOUT.stage_marker("judge") == "audit/_done/judge.json"
    assert LAYOUT.judge_marker("abc", "unit") == "judgments/_done/abc/unit.json"
    assert posixpath.dirname(LAYOUT.judge_markers("abc")) == LAYOUT.judge_markers()
    # The audit's crawl settings survive the removal of its stage markers.
    assert not LAYOUT.crawl_settings.startswith(LAYOUT.markers(LAYOUT.audit))


def test_judgment_parts_are_never_reused_and_name_their_unit():
    first, second = (
        LAYOUT.new_judgment_part("shard-00001-00000"),
        LAYOUT.new_judgment_part("shard-00001-00000"),
    )
    assert first != second
    assert LAYOUT.unit_of_judgment_part(posixpath.basename(first)) == "shard-00001-00000"


def test_every_named_path_is_relative_and_distinct():
    names = [getattr(LAYOUT, f.name) for f in fields(LAYOUT)]
    derived = [LAYOUT.crawl_manifest, LAYOUT.crawl_hosts, LAYOUT.crawl_summary, LAYOUT.source_scores,
               LAYOUT.coverage, LAYOUT.collect_manifest, LAYOUT.crawl_settings]  # fmt: skip
    assert len(set(names + derived)) == len(names + derived)
    assert not any(path.startswith("/") for path in names + derived)
