"""Units of work of the judge: one page part and the (page, query) pairs it holds.

The driver plans units from a few short columns (:mod:`judge.plan`, :func:`plan_unit`); a worker
takes a unit, reads its pairs and only that part's page rows, builds the stage requests, reuses what
is committed, judges the rest and writes the judgment parts itself (:class:`UnitJudge`). A unit is
done under one judge identity when its marker ``judgments/_done/<identity>/<unit>.json`` exists with
the same pairs; a unit that left ``error`` rows gets no marker, so the next run retries those rows
(and only those).

Exactly once: every part is written atomically under a fresh name, and a unit reads the keys its own
parts already hold before judging, so a retried or killed unit never commits a final judgment twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crawler.base import RunStore
from crawler.layout import LAYOUT
from judge.config import JudgeConfig
from judge.engines import make_engine
from judge.engines.base import Judged, JudgeEngine, Outcome
from judge.packet import PagePacket, StageRequest
from judge.plan import UnitPairs
from judge.rubric import RUBRIC_VERSION, STAGES
from judge.schema import JUDGMENT_SCHEMA

#: Statuses that count as done; ``error`` rows (transport failures) are retried by the next run.
FINAL_STATUSES = ("scored", "unscorable", "skipped")
#: Page columns a worker reads to build packets (never the raw HTML or the WARC).
PACKET_COLUMNS = (
    "url_key", "url", "final_url", "status", "error", "content_sha256", "domain", "title", "authors",
    "published_date", "modified_date", "site_name", "language", "text_full", "text_main", "signals",
)  # fmt: skip
TOKEN_FIELDS = ("prompt_tokens", "cached_prompt_tokens", "output_tokens", "truncated_chars")
_STAGE_ORDER = {s: i for i, s in enumerate(STAGES)}


def judgment_key(url: str, content_hash: str, query_text: str, stage: str, identity: dict[str, Any]) -> str:
    """The cache key of one stage judgment (the URL is part of the prompt, so it is part of the key)."""
    blob = json.dumps([url, content_hash, query_text, stage, identity], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def engine_identity(engine: JudgeEngine) -> str:
    """A short hash of everything that decides the engine's answers: the name of its unit markers."""
    blob = json.dumps(
        [engine.name, engine.model, engine.prompt_layout, [engine.identity(s) for s in STAGES]],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- the plan (driver) -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Unit:
    """One unit of work: a page part and the pairs to judge on its pages."""

    unit: str
    part: str | None
    """The page part's file name under ``pages/`` (None for :data:`judge.plan.NO_PAGE_UNIT`)."""
    pairs_path: str
    """Where the plan wrote the unit's ``url_key, query_id, query_text`` (a run path, named by
    ``pairs_sha``), so that a unit item stays small however many pairs it has."""
    pairs_sha: str
    judgment_parts: tuple[str, ...] = ()
    """Judgment parts that may hold this unit's keys (names under ``judgments/``): those written by
    any unit of the same crawl shard, since a page fetched again lands in a new part of its shard
    while its judgments stay where they were written."""

    def to_item(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "part": self.part,
            "pairs_path": self.pairs_path,
            "pairs_sha": self.pairs_sha,
            "judgment_parts": json.dumps(list(self.judgment_parts)),
        }

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Unit:
        return cls(
            item["unit"],
            item["part"],
            item["pairs_path"],
            item["pairs_sha"],
            tuple(json.loads(item["judgment_parts"])),
        )


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _shard_of_unit(unit: str) -> str:
    """The crawl shard whose parts a unit judges (the unit itself for parts from elsewhere)."""
    return LAYOUT.shard_of_page_part(f"{unit}.parquet") or unit


def judgment_parts_by_shard(judgment_parts: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The run's judgment parts (names under ``judgments/``) by the crawl shard of their unit."""
    by_shard: dict[str, list[str]] = {}
    for name in judgment_parts:
        owner = LAYOUT.unit_of_judgment_part(name)
        if owner is not None:
            by_shard.setdefault(_shard_of_unit(owner), []).append(name)
    return {shard: tuple(names) for shard, names in by_shard.items()}


def pairs_digest(pairs: pa.Table) -> str:
    """The digest of a unit's pairs and of its pages' state (``status, content_sha256``): a unit
    whose pages were fetched again with another outcome (a refused page now ok, a changed text) is
    judged again even when the new records land in a part of the same name."""
    blob = _ipc(pairs.select(["url_key", "query_id", "query_text"]).combine_chunks())
    state = _ipc(pairs.select(["status", "content_sha256"]).combine_chunks())
    return hashlib.sha256(blob + state).hexdigest()[:16]


def plan_unit(planned: UnitPairs, judgment_parts: dict[str, tuple[str, ...]]) -> tuple[Unit, pa.Table]:
    """The unit of a planned page part, and the pairs its workers read (to be written at its path)."""
    digest = pairs_digest(planned.pairs)
    unit = Unit(
        planned.unit,
        planned.part,
        LAYOUT.judge_plan(planned.unit, digest),
        digest,
        judgment_parts.get(_shard_of_unit(planned.unit), ()),
    )
    return unit, planned.pairs.select(["url_key", "query_id", "query_text"])


# -- the work of one unit (workers) ----------------------------------------------------------------
@dataclass
class UnitCounts:
    """What one unit did, summed over the run."""

    stage_requests: int = 0
    already_done: int = 0
    from_cache: int = 0
    judged: int = 0
    statuses: Counter = field(default_factory=Counter)
    tokens: Counter = field(default_factory=Counter)
    latency_s: float = 0.0

    def add_row(self, row: dict[str, Any]) -> None:
        self.statuses[row["status"]] += 1
        for name in TOKEN_FIELDS:
            self.tokens[name] += row[name]
        self.latency_s += row["latency_s"]

    def to_row(self, unit: str) -> dict[str, Any]:
        return {
            "unit": unit,
            "stage_requests": self.stage_requests,
            "already_done": self.already_done,
            "from_cache": self.from_cache,
            "judged": self.judged,
            "statuses": json.dumps(dict(self.statuses)),
            **{name: int(self.tokens[name]) for name in TOKEN_FIELDS},
            "latency_s": self.latency_s,
        }

    def merge_row(self, row: dict[str, Any]) -> None:
        for name in ("stage_requests", "already_done", "from_cache", "judged"):
            setattr(self, name, getattr(self, name) + int(row[name]))
        self.statuses.update(json.loads(row["statuses"]))
        self.tokens.update({name: int(row[name]) for name in TOKEN_FIELDS})
        self.latency_s += float(row["latency_s"])


@dataclass
class Prepared:
    """A unit ready for its engine: the requests left to judge, and what it already did."""

    unit: Unit
    pending: list[StageRequest]
    counts: UnitCounts


class PartWriter:
    """Buffers one unit's judgment rows and commits them as atomic Parquet parts (run and cache)."""

    def __init__(self, stores: list[RunStore], unit: str, batch_size: int):
        self.stores, self.unit, self.batch_size = stores, unit, batch_size
        self.rows: list[dict[str, Any]] = []

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.rows.append(row)
            if len(self.rows) >= self.batch_size:
                self.flush()

    def write_table(self, table: pa.Table) -> None:
        if table.num_rows:
            name = LAYOUT.new_judgment_part(self.unit)
            for store in self.stores:
                store.write_table(name, table)

    def flush(self) -> None:
        if self.rows:
            self.write_table(pa.Table.from_pylist(self.rows, schema=JUDGMENT_SCHEMA))
            self.rows = []


class UnitJudge:
    """Judges units in one worker (a Ray actor, or the driver under the local executor).

    The engine is built once per worker: the signals judge loads MiniLM once, an HTTP engine keeps
    its client settings, the vLLM engine its tokenizer for rendering.
    """

    def __init__(self, run_uri: str, config: JudgeConfig):
        self.store = RunStore(run_uri)
        self.config = config
        self.cache = RunStore(config.cache_uri) if config.cache_uri else None
        self.engine = make_engine(config)
        self.identity = engine_identity(self.engine)
        self._legacy: set[str] | None = None

    # -- reading what the unit needs ---------------------------------------------------------------
    def _pages(self, unit: Unit, keys: pa.Array) -> dict[str, dict[str, Any]]:
        if unit.part is None:
            return {}
        table = pq.read_table(
            self.store.path(LAYOUT.page_part(unit.part)),
            columns=list(PACKET_COLUMNS),
            filesystem=self.store.fs,
        )
        return {row["url_key"]: row for row in table.filter(pc.is_in(table["url_key"], keys)).to_pylist()}

    def _final_keys(self, paths: Iterable[str], fs) -> set[str]:
        keys: set[str] = set()
        for path in paths:
            table = pq.read_table(path, columns=["judgment_key", "status"], filesystem=fs)
            done = table.filter(pc.is_in(table["status"], pa.array(FINAL_STATUSES)))
            keys.update(done["judgment_key"].to_pylist())
        return keys

    def _legacy_keys(self) -> set[str]:
        """Final keys of judgment parts written before units existed (read once per worker)."""
        if self._legacy is None:
            names = [
                n
                for n in self.store.listdir(LAYOUT.judgments, suffix=".parquet")
                if LAYOUT.unit_of_judgment_part(n) is None
            ]
            self._legacy = self._final_keys(
                (self.store.path(LAYOUT.judgments, n) for n in names), self.store.fs
            )
        return self._legacy

    def _done_keys(self, unit: Unit) -> set[str]:
        paths = (self.store.path(LAYOUT.judgments, n) for n in unit.judgment_parts)
        return self._final_keys(paths, self.store.fs) | self._legacy_keys()

    def _from_cache(self, keys: set[str]) -> pa.Table:
        """Final rows of the shared cache for these keys, one per key."""
        assert self.cache is not None
        wanted = pa.array(sorted(keys), pa.string())
        tables = []
        for name in self.cache.listdir(LAYOUT.judgments, suffix=".parquet"):
            path = self.cache.path(LAYOUT.judgments, name)
            index = pq.read_table(path, columns=["judgment_key", "status"], filesystem=self.cache.fs)
            hit = pc.and_(
                pc.is_in(index["judgment_key"], wanted), pc.is_in(index["status"], pa.array(FINAL_STATUSES))
            )
            if pc.any(hit).as_py():
                table = pq.read_table(path, filesystem=self.cache.fs, schema=JUDGMENT_SCHEMA)
                tables.append(table.filter(hit))
        if not tables:
            return JUDGMENT_SCHEMA.empty_table()
        table = pa.concat_tables(tables)
        table = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
        first = table.group_by("judgment_key", use_threads=False).aggregate([("_row", "min")])
        return table.take(first["_row_min"]).drop_columns(["_row"])

    # -- building requests ---------------------------------------------------------------------------
    def _requests(self, unit: Unit) -> tuple[list[StageRequest], list[tuple[StageRequest, str]]]:
        """Stage requests to judge (a page's stages adjacent), and ``skipped`` ones with their reason."""
        pairs = self.store.read_table(unit.pairs_path)
        pages = self._pages(unit, pairs["url_key"])
        todo: list[StageRequest] = []
        skipped: list[tuple[StageRequest, str]] = []
        engine, text_field = self.engine, self.config.prompts.text_field
        for req in pairs.to_pylist():
            record = pages.get(req["url_key"])
            ok = record is not None and record.get("status") == "ok"
            packet = PagePacket.from_record(record, text_field) if ok else None
            for stage in STAGES:
                if packet is not None:
                    key = judgment_key(
                        packet.url, packet.content_hash, req["query_text"], stage, engine.identity(stage)
                    )
                    todo.append(StageRequest(key, packet, req["query_id"], req["query_text"], stage))
                    continue
                reason = "no page record" if record is None else f"page status {record.get('status')}"
                detail = (record or {}).get("error")
                key = judgment_key(
                    req["url_key"],
                    f"skip:{reason}:{detail}",
                    req["query_text"],
                    stage,
                    engine.identity(stage),
                )
                page = PagePacket(req["url_key"], (record or {}).get("url") or "", "", "")
                skipped.append(
                    (
                        StageRequest(key, page, req["query_id"], req["query_text"], stage),
                        reason + (f": {detail}" if detail else ""),
                    )
                )
        todo.sort(key=lambda r: (r.page.url_key, r.query_id, _STAGE_ORDER[r.stage]))
        return todo, skipped

    def prepare(self, unit: Unit, writer: PartWriter) -> Prepared:
        """Build the unit's requests; commit its skipped rows and cache hits; return what is left."""
        todo, skipped = self._requests(unit)
        done = self._done_keys(unit)
        counts = UnitCounts(stage_requests=len(todo) + len(skipped))
        new_skips = [
            self.row(r, None, status="skipped", error=why) for r, why in skipped if r.judgment_key not in done
        ]
        pending = [r for r in todo if r.judgment_key not in done]
        counts.already_done = counts.stage_requests - len(pending) - len(new_skips)
        if self.cache is not None and pending:
            cached = self._from_cache({r.judgment_key for r in pending})
            if cached.num_rows:
                self.store.write_table(LAYOUT.new_judgment_part(unit.unit), cached)
                hit = set(cached["judgment_key"].to_pylist())
                pending = [r for r in pending if r.judgment_key not in hit]
                counts.from_cache = cached.num_rows
        for row in new_skips:
            counts.add_row(row)
        writer.add(new_skips)
        counts.judged = len(pending)
        return Prepared(unit, pending, counts)

    # -- rows and markers ----------------------------------------------------------------------------
    def row(
        self,
        request: StageRequest,
        outcome: Outcome | None,
        *,
        status: str | None = None,
        error: str | None = None,
        truncated: int = 0,
    ) -> dict[str, Any]:
        """One JUDGMENT_SCHEMA row."""
        c = outcome.completion if outcome else None
        return {
            "judgment_key": request.judgment_key,
            "url_key": request.page.url_key,
            "query_id": request.query_id,
            "stage": request.stage,
            "status": status or outcome.status,
            "error": error if outcome is None else (None if outcome.status == "scored" else outcome.problem),
            "scores": outcome.scores.as_rows() if outcome and outcome.scores else [],
            "raw_output": c.text if c else None,
            "engine": self.engine.name,
            "model": self.engine.model,
            "rubric_version": RUBRIC_VERSION,
            "prompt_layout": self.engine.prompt_layout,
            "prompt_version": self.engine.prompt_version(request.stage),
            "prompt_tokens": c.prompt_tokens if c else 0,
            "cached_prompt_tokens": c.cached_prompt_tokens if c else 0,
            "output_tokens": c.output_tokens if c else 0,
            "truncated_chars": truncated,
            "latency_s": c.latency_s if c else 0.0,
            "judged_at": dt.datetime.now(dt.UTC),
        }

    def mark_done(self, unit: Unit, counts: UnitCounts) -> None:
        """The unit's marker, written last, and only when none of its rows is an ``error``."""
        if counts.statuses.get("error"):
            return
        self.store.write_json(
            LAYOUT.judge_marker(self.identity, unit.unit),
            {"pairs_sha": unit.pairs_sha, "stage_requests": counts.stage_requests},
        )

    def writer(self, unit: str) -> PartWriter:
        return PartWriter(
            [self.store] + ([self.cache] if self.cache else []), unit, self.config.write_batch_size
        )

    def judge_unit(self, unit: Unit) -> UnitCounts:
        """The whole unit in this worker: prepare, judge, write, mark (engines without a Ray stage)."""
        writer = self.writer(unit.unit)
        prepared = self.prepare(unit, writer)
        for judged in self._judge(prepared.pending):
            row = self.row(judged.request, judged.outcome, truncated=judged.truncated_chars)
            prepared.counts.add_row(row)
            writer.add([row])
        writer.flush()
        self.mark_done(unit, prepared.counts)
        return prepared.counts

    def _judge(self, pending: list[StageRequest]) -> Iterator[Judged]:
        step = self.config.write_batch_size
        for start in range(0, len(pending), step):
            yield from self.engine.judge(pending[start : start + step])

    def __call__(self, batch: pa.Table) -> pa.Table:
        """Ray Data entry point: a batch of unit items in, one summary row per unit out."""
        rows = [self.judge_unit(Unit.from_item(item)).to_row(item["unit"]) for item in batch.to_pylist()]
        return pa.Table.from_pylist(rows)


def unit_done(store: RunStore, identity: str, unit: Unit) -> dict[str, Any] | None:
    """The unit's marker under this identity when it covers exactly these pairs, else None."""
    path = LAYOUT.judge_marker(identity, unit.unit)
    if not store.exists(path):
        return None
    marker = store.read_json(path)
    return marker if marker.get("pairs_sha") == unit.pairs_sha else None
