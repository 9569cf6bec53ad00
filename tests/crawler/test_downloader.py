"""The downloader's pacing checkpoint: in the run, and few writes however many Crawl-delays come at once."""

from __future__ import annotations

import asyncio

from crawler.fetch.downloader import CHECKPOINT_MIN_S, HostSlotDownloader, PacingCheckpoint
from crawler.layout import LAYOUT
from crawler.storage import RunStore


class CountedCheckpoint(PacingCheckpoint):
    writes = 0

    def write(self, timings) -> None:
        type(self).writes += 1
        super().write(timings)


def checkpointing_downloader(run: str) -> HostSlotDownloader:
    """The downloader's checkpoint state alone (no Scrapy crawler: nothing here downloads)."""
    downloader = HostSlotDownloader.__new__(HostSlotDownloader)
    downloader.min_delays, downloader.timings, downloader.slots = {}, {}, {}
    downloader._checkpoint = CountedCheckpoint(run, LAYOUT.crawl_pacing("s0"), every_s=30.0)
    downloader._checkpointed, downloader._urgent = 0.0, None
    return downloader


def test_many_crawl_delays_at_once_are_written_together_and_soon(tmp_path):
    """A shard of 200 hosts reads their robots.txt files at once: two writes (the first at once, the
    rest together CHECKPOINT_MIN_S later), not one blocking store write each; all 200 are in the run."""
    run = str(tmp_path / "run")
    downloader = checkpointing_downloader(run)

    async def crawl_delays() -> None:
        for i in range(200):
            downloader.set_min_delay(f"127.0.2.{i}", 5.0 + i)
        assert CountedCheckpoint.writes == 1
        await asyncio.sleep(CHECKPOINT_MIN_S + 0.3)

    asyncio.run(crawl_delays())
    assert CountedCheckpoint.writes == 2
    stored = RunStore(run).read_json(LAYOUT.crawl_pacing("s0"))
    assert len(stored["hosts"]) == 200 and stored["hosts"]["127.0.2.199"]["crawl_delay_s"] == 204.0
    assert stored["written_at"] > 0
