"""The layout of a run directory: every folder, file, part and marker name, in one place.

Every stage reads and writes a run through these names, so a path is spelled once. The layout sits at
the bottom of the dependency chain (``jobs -> judge -> crawler``) so that all three can use it::

    <run>/manifest.json                     the audit manifest (attempts, stages, config)
    <run>/inputs/{queries,citations,selected_sources}.parquet
    <run>/crawl/shards/<shard>.json         the crawl plan;  crawl/_done/<shard>.json  its markers
    <run>/pages/<shard>-<seq>.parquet       page records (the judge's units of work)
    <run>/warc/<shard>-<seq>.warc.gz
    <run>/judgments/<unit>@<stamp>-<id>.parquet           judgment parts, named by the unit that wrote them
    <run>/judgments/_done/<identity>/<unit>.json         a unit judged under one judge identity
    <run>/judgments/_plan/<unit>-<digest>.parquet        the pairs of a planned unit, read by its worker
    <run>/judgments/_runs/<stamp>.json                   one summary per judge call
    <run>/scores/source_scores.parquet
    <run>/leaderboard/...                   the reduce and the report
    <run>/audit/_done/<stage>.json          audit stage markers
    <run>/costbench/<label>/                a costbench sample, itself a run
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class RunLayout:
    """Names inside one run directory (relative paths, for :class:`crawler.storage.RunStore`)."""

    manifest: str = "manifest.json"
    queries: str = "inputs/queries.parquet"
    citations: str = "inputs/citations.parquet"
    selected: str = "inputs/selected_sources.parquet"
    crawl: str = "crawl"
    """The crawl's folder: plan (``shards/``), markers (``_done/``), manifest and summary."""
    pages: str = "pages"
    warc: str = "warc"
    judgments: str = "judgments"
    scores: str = "scores/source_scores.parquet"
    leaderboard: str = "leaderboard"
    audit: str = "audit"
    """The audit's stage markers live under ``audit/_done/``."""
    costbench: str = "costbench"

    # -- the crawl ---------------------------------------------------------------------------------
    def crawl_shard(self, shard_id: str) -> str:
        return f"{self.crawl}/shards/{shard_id}.json"

    def crawl_marker(self, shard_id: str) -> str:
        return f"{self.crawl}/_done/{shard_id}.json"

    def page_part(self, name: str) -> str:
        """A page part by file name (``shard-00001-00000.parquet``)."""
        return f"{self.pages}/{name}"

    @staticmethod
    def shard_of_page_part(name: str) -> str | None:
        """The crawl shard that wrote a page part (None for parts imported some other way)."""
        match = _PAGE_PART.match(name)
        return match.group("shard") if match else None

    # -- the judge ---------------------------------------------------------------------------------
    @staticmethod
    def unit_of_part(part_name: str) -> str:
        """The judge unit of a page part: its file name without ``.parquet``."""
        return part_name[: -len(".parquet")] if part_name.endswith(".parquet") else part_name

    @staticmethod
    def unit_of_judgment_part(name: str) -> str | None:
        """The unit that wrote a judgment part, or None for parts written before units existed."""
        return name.split("@", 1)[0] if "@" in name else None

    def new_judgment_part(self, unit: str) -> str:
        """A fresh judgment part name for ``unit`` (never reused, so a retry cannot overwrite a commit)."""
        stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        return f"{self.judgments}/{unit}@{stamp}.parquet"

    def judge_markers(self, identity: str) -> str:
        """The folder of the unit markers of one judge identity."""
        return f"{self.judgments}/_done/{identity}"

    def judge_marker(self, identity: str, unit: str) -> str:
        return f"{self.judge_markers(identity)}/{unit}.json"

    @property
    def judge_plans(self) -> str:
        """The folder of the planned units' pairs."""
        return f"{self.judgments}/_plan"

    def judge_plan(self, unit: str, digest: str) -> str:
        """The pairs of one planned unit, named by their digest (the same pairs are written once)."""
        return f"{self.judge_plans}/{unit}-{digest}.parquet"

    def judge_summary(self) -> str:
        stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
        return f"{self.judgments}/_runs/{stamp}.json"

    # -- the audit and the reduce -----------------------------------------------------------------
    def stage_marker(self, stage: str) -> str:
        return f"{self.audit}/_done/{stage}.json"

    def leaderboard_file(self, name: str) -> str:
        return posixpath.join(self.leaderboard, name)

    def costbench_run(self, label: str) -> str:
        return posixpath.join(self.costbench, label)


_PAGE_PART = re.compile(r"^(?P<shard>shard-\d+)-(?P<seq>\d+)\.parquet$")

#: The layout every run uses.
LAYOUT = RunLayout()
