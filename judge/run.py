"""Judge a run: page x query requests in, resumable ``<run>/judgments/*.parquet`` out.

For each requested (page, query) the run makes three stage requests, keys each with
``judgment_key`` (page content hash, query, stage, and everything that decides the prompt and the
answer: rubric and prompt versions, layout, date, model, sampling), skips keys the run already has
(or copies them from a shared cache), and judges the rest in passes. Each Parquet part is written
atomically, so a killed run loses at most the part in flight and never duplicates a judgment.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crawler.errors import InputError
from crawler.storage import RunStore
from judge.config import JudgeConfig
from judge.engines import LLMEngine, make_engine
from judge.engines.base import Outcome, outcome_of
from judge.packet import PagePacket, StageRequest
from judge.rubric import RUBRIC_VERSION, STAGES
from judge.schema import JUDGMENT_SCHEMA

log = logging.getLogger(__name__)

REQUEST_COLUMNS = ("url_key", "query_id", "query_text")
#: Statuses that count as done; ``error`` rows (transport failures) are retried by the next run.
FINAL_STATUSES = ("scored", "unscorable", "skipped")
_STAGE_ORDER = {s: i for i, s in enumerate(STAGES)}


def judgment_key(url: str, content_hash: str, query_text: str, stage: str, identity: dict[str, Any]) -> str:
    """The cache key of one stage judgment (the URL is part of the prompt, so it is part of the key)."""
    blob = json.dumps([url, content_hash, query_text, stage, identity], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _judgment_parts(store: RunStore, folder: str = "judgments") -> list[str]:
    return [store.path(folder, name) for name in store.listdir(folder, suffix=".parquet")]


def final_keys(store: RunStore, folder: str = "judgments") -> set[str]:
    """Judgment keys already committed with a final status."""
    keys: set[str] = set()
    for path in _judgment_parts(store, folder):
        table = pq.read_table(path, columns=["judgment_key", "status"], filesystem=store.fs)
        done = table.filter(pc.is_in(table["status"], pa.array(FINAL_STATUSES)))
        keys.update(done["judgment_key"].to_pylist())
    return keys


def read_judgments(run_uri: str) -> pa.Table:
    """All judgment rows of a run (every part), in JUDGMENT_SCHEMA."""
    return RunStore(run_uri).read_table("judgments", schema=JUDGMENT_SCHEMA)


def _validate_requests(requests: pa.Table) -> pa.Table:
    missing = [c for c in REQUEST_COLUMNS if c not in requests.column_names]
    if missing:
        raise InputError("judge requests", f"missing columns {missing}", field=missing[0])
    for column in REQUEST_COLUMNS:
        nulls = requests[column].null_count
        if nulls:
            index = requests[column].is_null().to_pylist().index(True)
            raise InputError("judge requests", "must not be null", line=index + 1, field=column)
    requests = requests.select(list(REQUEST_COLUMNS)).cast(
        pa.schema([(c, pa.string()) for c in REQUEST_COLUMNS])
    )
    # One request per (page, query): a repeated pair would be judged twice under one key.
    pairs = list(zip(requests["url_key"].to_pylist(), requests["query_id"].to_pylist(), strict=True))
    first = {pair: i for i, pair in reversed(list(enumerate(pairs)))}
    return requests.take(sorted(first.values()))


def _load_pages(store: RunStore, url_keys: set[str]) -> dict[str, dict[str, Any]]:
    """The page records the requests need (streamed, so only those rows stay in memory)."""
    pages: dict[str, dict[str, Any]] = {}
    keys = pa.array(sorted(url_keys), pa.string())
    for batch in store.iter_batches("pages", batch_size=1024):
        table = pa.Table.from_batches([batch])
        wanted = table.filter(pc.is_in(table["url_key"], keys))
        for row in wanted.to_pylist():
            pages[row["url_key"]] = row
    return pages


def _row(
    request: StageRequest,
    engine: Any,
    outcome: Outcome | None,
    *,
    status: str | None = None,
    error: str | None = None,
    truncated: int = 0,
    layout: str | None = None,
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
        "engine": engine.name,
        "model": engine.model,
        "rubric_version": RUBRIC_VERSION,
        "prompt_layout": layout,
        "prompt_version": engine.prompt_version(request.stage),
        "prompt_tokens": c.prompt_tokens if c else 0,
        "cached_prompt_tokens": c.cached_prompt_tokens if c else 0,
        "output_tokens": c.output_tokens if c else 0,
        "truncated_chars": truncated,
        "latency_s": c.latency_s if c else 0.0,
        "judged_at": dt.datetime.now(dt.UTC),
    }


class _PartWriter:
    """Buffers judgment rows and commits them as atomic Parquet parts (to the run and the cache)."""

    def __init__(self, stores: list[RunStore], batch_size: int):
        self.stores, self.batch_size, self.rows = stores, batch_size, []
        self.written = 0

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.rows.append(row)
            if len(self.rows) >= self.batch_size:
                self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        table = pa.Table.from_pylist(self.rows, schema=JUDGMENT_SCHEMA)
        name = f"judgments/part-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}.parquet"
        for store in self.stores:
            store.write_table(name, table)
        self.written += len(self.rows)
        self.rows = []


def _build(requests: pa.Table, pages: dict[str, dict[str, Any]], engine: Any, config: JudgeConfig):
    """Stage requests to judge, and explicit ``skipped`` rows for pages that cannot be judged."""
    todo: list[StageRequest] = []
    skipped: list[dict[str, Any]] = []
    for req in requests.to_pylist():
        record = pages.get(req["url_key"])
        for stage in STAGES:
            if record is None or record.get("status") != "ok":
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
                continue
            page = PagePacket.from_record(record, config.prompts.text_field)
            key = judgment_key(page.url, page.content_hash, req["query_text"], stage, engine.identity(stage))
            todo.append(StageRequest(key, page, req["query_id"], req["query_text"], stage))
    todo.sort(key=lambda r: (r.page.url_key, r.query_id, _STAGE_ORDER[r.stage]))
    return todo, skipped


def _copy_from_cache(cache: RunStore, keys: set[str]) -> pa.Table:
    tables = []
    for path in _judgment_parts(cache):
        table = pq.read_table(path, filesystem=cache.fs, schema=JUDGMENT_SCHEMA)
        tables.append(table.filter(pc.is_in(table["judgment_key"], pa.array(sorted(keys), pa.string()))))
    if not tables:
        return JUDGMENT_SCHEMA.empty_table()
    table = pa.concat_tables(tables)
    table = table.filter(pc.is_in(table["status"], pa.array(FINAL_STATUSES)))
    # One row per key (the cache may hold the same key from several runs).
    seen, keep = set(), []
    for i, key in enumerate(table["judgment_key"].to_pylist()):
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return table.take(keep)


def _outcomes(engine: Any, chunk: list[StageRequest]) -> Iterator[tuple[StageRequest, Outcome, int]]:
    by_key = {r.judgment_key: r for r in chunk}
    if isinstance(engine, LLMEngine):
        rendered = engine.render_all(chunk)
        for outcome in engine.judge(chunk, rendered):
            key = outcome.completion.key
            yield by_key[key], outcome, rendered[key].truncated_chars
    else:
        for completion in engine.score(chunk):
            request = by_key[completion.key]
            yield request, outcome_of(completion, request.stage), 0


def judge_run(run_uri: str, requests: pa.Table, config: JudgeConfig) -> dict[str, Any]:
    """Judge every (page, query) in ``requests`` and write ``<run>/judgments/*.parquet``.

    Args:
        run_uri: The run directory (local or ``s3://``); page records are read from ``<run>/pages/``.
        requests: Columns ``url_key, query_id, query_text``, one row per page x query to judge.
        config: The judge configuration.

    Returns:
        A summary: request counts by status, what was reused, and summed token accounting.
    """
    started = time.perf_counter()
    store = RunStore(run_uri)
    requests = _validate_requests(requests)
    if not store.exists("pages"):
        raise InputError(store.uri_of("pages"), "no page records: run the crawl first")
    engine = make_engine(config)
    layout = config.prompts.layout if isinstance(engine, LLMEngine) else None
    pages = _load_pages(store, set(requests["url_key"].to_pylist()))
    todo, skipped = _build(requests, pages, engine, config)
    done = final_keys(store)
    cache = RunStore(config.cache_uri) if config.cache_uri else None
    writer = _PartWriter([store] + ([cache] if cache else []), config.write_batch_size)

    new_skips = [
        _row(r, engine, None, status="skipped", error=why, layout=layout)
        for r, why in skipped
        if r.judgment_key not in done
    ]
    pending = [r for r in todo if r.judgment_key not in done]
    already_done = len(todo) - len(pending) + len(skipped) - len(new_skips)
    reused = 0
    if cache and pending:
        cached = _copy_from_cache(cache, {r.judgment_key for r in pending})
        if cached.num_rows:
            store.write_table(f"judgments/part-cache-{uuid.uuid4().hex[:8]}.parquet", cached)
            hit = set(cached["judgment_key"].to_pylist())
            pending = [r for r in pending if r.judgment_key not in hit]
            reused = cached.num_rows
    writer.add(new_skips)

    statuses: Counter[str] = Counter(row["status"] for row in new_skips)
    tokens = Counter()
    pass_size = config.vllm.requests_per_pass if config.engine == "vllm" else config.write_batch_size
    for start in range(0, len(pending), pass_size):
        chunk = pending[start : start + pass_size]
        for request, outcome, truncated in _outcomes(engine, chunk):
            row = _row(request, engine, outcome, truncated=truncated, layout=layout)
            statuses[row["status"]] += 1
            for field in ("prompt_tokens", "cached_prompt_tokens", "output_tokens", "truncated_chars"):
                tokens[field] += row[field]
            tokens["latency_s"] += row["latency_s"]
            writer.add([row])
    writer.flush()
    summary = {
        "engine": engine.name,
        "model": engine.model,
        "prompt_layout": layout,
        "requests": requests.num_rows,
        "stage_requests": len(todo) + len(skipped),
        "already_done": already_done,
        "from_cache": reused,
        "judged": len(pending),
        "statuses": dict(statuses),
        "prompt_tokens": int(tokens["prompt_tokens"]),
        "cached_prompt_tokens": int(tokens["cached_prompt_tokens"]),
        "output_tokens": int(tokens["output_tokens"]),
        "truncated_chars": int(tokens["truncated_chars"]),
        "engine_latency_s": round(tokens["latency_s"], 3),
        "wall_s": round(time.perf_counter() - started, 3),
    }
    store.write_json(
        f"judgments/_runs/{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}.json", summary
    )
    return summary


def accounting(judgments: pa.Table) -> dict[str, Any]:
    """Token and latency totals of a judgments table, overall and per stage (for cost reports)."""
    out: dict[str, Any] = {}
    for stage in (None, *STAGES):
        table = judgments if stage is None else judgments.filter(pc.equal(judgments["stage"], stage))
        table = table.filter(pc.not_equal(table["status"], "skipped"))
        prompt = pc.sum(table["prompt_tokens"]).as_py() or 0
        cached = pc.sum(table["cached_prompt_tokens"]).as_py() or 0
        entry = {
            "judgments": table.num_rows,
            "prompt_tokens": prompt,
            "cached_prompt_tokens": cached,
            "prefill_tokens": prompt - cached,
            "output_tokens": pc.sum(table["output_tokens"]).as_py() or 0,
            "prefix_cache_hit_rate": cached / prompt if prompt else 0.0,
            "latency_s": pc.sum(table["latency_s"]).as_py() or 0.0,
        }
        out["total" if stage is None else stage] = entry
    return out


__all__ = ["FINAL_STATUSES", "accounting", "final_keys", "judge_run", "judgment_key", "read_judgments"]
