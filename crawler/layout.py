"""The layout of a run directory: every folder, file, part and marker name, in one place.

Every stage reads and writes a run through these names, so a path is spelled once. The layout sits at
the bottom of the dependency chain (``jobs -> judge -> crawler``) so that all three can use it::

    <run>/manifest.json                     the audit manifest (attempts, stages, config)
    <run>/inputs/{queries,citations,selected_sources}.parquet
    <run>/crawl/shards/<shard>.json         the crawl plan;  crawl/_done/<shard>.json  its markers
    <run>/crawl/_pacing/<shard>.json        its hosts' pacing while its process runs (for a retry)
    <run>/crawl/redirects/<shard>-<seq>.json    cross-host redirects a shard left to the next round
    <run>/crawl/{manifest,hosts,summary}.json   the crawl's settings, per-host backlog and run summary
    <run>/pages/<shard>-<seq>.parquet       page records (the judge's units of work)
    <run>/warc/<shard>-<seq>.warc.gz
    <run>/judgments/<unit>@<stamp>-<id>.parquet           judgment parts, named by the unit that wrote them
    <run>/judgments/_done/<identity>/<unit>.json         a unit judged under one judge identity
    <run>/judgments/_plan/<unit>-<digest>.parquet        the pairs of a planned unit, read by its worker
    <run>/judgments/_runs/<stamp>.json                   one summary per judge call
    <run>/scores/source_scores.parquet      the scored sources;  scores/coverage.json  their coverage
    <run>/leaderboard/...                   the reduce (leaderboard_data.json, source_metrics and the official
                                            tables, .csv/.parquet), coverage.json, INCOMPLETE.txt, the report
    <run>/audit/_done/<stage>.json          audit stage markers
    <run>/costbench/<label>/                a costbench sample, itself a run
    <run>/collect/{_done/,manifest.json}    ``sourcebench collect``'s chunk markers and manifest
    <run>/{answers,citations}/<chunk>.parquet   its committed parts, one per chunk and table
    <run>/citations.parquet, <run>/queries.csv  its citations in one file and its swept queries
    <run>/calibration/                      ``sourcebench calibrate``'s agreement and gate tables

A stage's unit of work is marked done by ``<folder>/_done/<task>.json`` (:meth:`RunLayout.marker`),
written after its output.
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
    scores: str = "scores"
    """The scores stage's folder: the scored sources and their coverage."""
    leaderboard: str = "leaderboard"
    audit: str = "audit"
    """The audit's stage markers live under ``audit/_done/``."""
    costbench: str = "costbench"
    collect: str = "collect"
    """``sourcebench collect``'s folder (chunk markers, ``manifest.json``) when it wrote into the run."""
    collect_answers: str = "answers"
    """``sourcebench collect``'s answer parts (one per committed chunk)."""
    collect_citations: str = "citations"
    """``sourcebench collect``'s citation parts (one per committed chunk)."""
    collect_citations_table: str = "citations.parquet"
    """Every committed citation of a sweep in one file, sorted: what an audit reads."""
    collect_queries: str = "queries.csv"
    """The queries a sweep asked (``query_id,query,query_type,language``), merged over its runs."""
    calibration: str = "calibration"
    """``sourcebench calibrate``'s default output folder (agreement, gate, few-shot examples)."""
    calibration_agreement: str = "agreement.csv"
    """Per dimension and judge configuration, its agreement with the human labels."""
    calibration_gate: str = "gate.csv"
    """Per judge configuration, whether its agreement passes the thresholds."""

    # -- names inside the reduce's output folder (a run's ``leaderboard/``) ------------------------
    leaderboard_data: str = "leaderboard_data.json"
    """The official leaderboard payload (overall, by query type, per query) and the reduce's metadata."""
    source_metrics: str = "source_metrics"
    """One row per (system, query, source) with its scores and rank columns (``.csv`` and ``.parquet``,
    ``jobs.leaderboard.metrics.SOURCE_METRICS_SCHEMA``)."""
    leaderboard_overall: str = "leaderboard_overall"
    """The official leaderboard, one row per system (``.csv``, and ``.parquet`` when it has rows)."""
    leaderboard_by_query_type: str = "leaderboard_by_query_type"
    """The same per system and query type."""
    query_metrics: str = "query_metrics"
    """The same per system and query."""
    main_table: str = "main_table"
    """The paper's main table: one row per system, one column group per query type."""
    incomplete_stamp: str = "INCOMPLETE.txt"
    """Written by the audit beside the leaderboard files while its coverage is below its threshold."""

    # -- markers -----------------------------------------------------------------------------------
    @staticmethod
    def markers(folder: str) -> str:
        """The folder of the done markers of a stage's units of work."""
        return f"{folder}/_done"

    def marker(self, folder: str, task: str) -> str:
        """The done marker of one unit of work (``task``) of the stage writing to ``folder``."""
        return f"{self.markers(folder)}/{task}.json"

    # -- the crawl ---------------------------------------------------------------------------------
    @property
    def crawl_shards(self) -> str:
        """The folder of the crawl plan: one JSON file per shard."""
        return f"{self.crawl}/shards"

    def crawl_shard(self, shard_id: str) -> str:
        return f"{self.crawl_shards}/{shard_id}.json"

    def crawl_marker(self, shard_id: str) -> str:
        return self.marker(self.crawl, shard_id)

    @property
    def crawl_redirects(self) -> str:
        """The folder of the redirects shards deferred to a later round (``crawler.fetch.sink``)."""
        return f"{self.crawl}/redirects"

    def crawl_redirect_part(self, stem: str) -> str:
        """The redirects deferred by one committed part of a shard (the page part's stem)."""
        return f"{self.crawl_redirects}/{stem}.json"

    def crawl_pacing(self, shard_id: str) -> str:
        """The hosts' pacing a shard's process last checkpointed (``crawler.fetch.downloader``): what a
        retry of the shard starts from when its process left no report, on this node or another."""
        return f"{self.crawl}/_pacing/{shard_id}.json"

    @property
    def crawl_manifest(self) -> str:
        """The crawl's settings and URL count, written before any shard runs."""
        return f"{self.crawl}/manifest.json"

    @property
    def crawl_hosts(self) -> str:
        """The per-host backlog of the crawl (URLs, shards, time spent)."""
        return f"{self.crawl}/hosts.json"

    @property
    def crawl_summary(self) -> str:
        return f"{self.crawl}/summary.json"

    @staticmethod
    def part_stem(shard_id: str, seq: int) -> str:
        """The shared stem of a shard's page part and WARC part number ``seq``."""
        return f"{shard_id}-{seq:05d}"

    def page_part(self, name: str) -> str:
        """A page part by file name (``shard-00001-00000.parquet``)."""
        return f"{self.pages}/{name}"

    def warc_part(self, stem: str) -> str:
        """The WARC part of a page part's stem (``shard-00001-00000``)."""
        return f"{self.warc}/{stem}.warc.gz"

    @staticmethod
    def part_of(name: str) -> tuple[str, int] | None:
        """(shard, sequence number) of a page, WARC or redirects part, or None for a part named some other
        way."""
        match = _PART.match(name)
        return (match.group("shard"), int(match.group("seq"))) if match else None

    def shard_of_page_part(self, name: str) -> str | None:
        """The crawl shard that wrote a page part (None for parts imported some other way)."""
        part = self.part_of(name) if name.endswith(".parquet") else None
        return part[0] if part else None

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
        return f"{self.judgments}/{unit}@{_unique_stamp()}.parquet"

    def judge_markers(self, identity: str | None = None) -> str:
        """The folder of the unit markers of one judge identity (of every identity when None)."""
        root = self.markers(self.judgments)
        return root if identity is None else f"{root}/{identity}"

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
        """A fresh name for the summary of one judge call."""
        return f"{self.judgments}/_runs/{_unique_stamp()}.json"

    # -- the scores, the audit and the reduce -------------------------------------------------------
    @property
    def source_scores(self) -> str:
        """The scored sources, one row per (system, query, source): the reduce's input."""
        return f"{self.scores}/source_scores.parquet"

    @property
    def coverage(self) -> str:
        """Coverage of the scored sources against the selected ones (``jobs.coverage``)."""
        return f"{self.scores}/coverage.json"

    def stage_marker(self, stage: str) -> str:
        return self.marker(self.audit, stage)

    @property
    def crawl_settings(self) -> str:
        """The settings of the audit's last completed crawl, kept apart from the stage markers (which a
        rerun of an earlier stage removes): a rerun refetches the pages whose status a changed setting
        decides."""
        return f"{self.audit}/crawl_settings.json"

    def leaderboard_file(self, name: str) -> str:
        return posixpath.join(self.leaderboard, name)

    @property
    def source_metrics_table(self) -> str:
        """The reduce's per-source metrics as Parquet, in a run."""
        return self.leaderboard_file(f"{self.source_metrics}.parquet")

    @property
    def leaderboard_coverage(self) -> str:
        """The audit's coverage per system, beside the leaderboard files."""
        return self.leaderboard_file("coverage.json")

    def costbench_run(self, label: str) -> str:
        return posixpath.join(self.costbench, label)

    def calibration_file(self, name: str) -> str:
        return posixpath.join(self.calibration, name)

    @staticmethod
    def collect_part(folder: str, chunk_id: str) -> str:
        """One chunk's part in a sweep's ``collect_answers`` or ``collect_citations`` folder."""
        return f"{folder}/{chunk_id}.parquet"

    @property
    def collect_manifest(self) -> str:
        """The systems (without keys) and counts of ``sourcebench collect``."""
        return f"{self.collect}/manifest.json"


def _unique_stamp() -> str:
    """UTC time to the second and a random suffix: names that sort by time and are never reused."""
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


_PART = re.compile(r"^(?P<shard>shard-\d+)-(?P<seq>\d+)\.(?:parquet|warc\.gz|json)$")

#: The layout every run uses.
LAYOUT = RunLayout()
