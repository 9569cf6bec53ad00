"""A collection sweep: every (system, query) pair asked once, committed in chunks, resumable.

Run-store layout (``<out>`` is the run directory; the names are ``crawler.layout.RunLayout``'s)::

    <out>/answers/<chunk>.parquet     ANSWERS_SCHEMA, one row per (system, query)
    <out>/citations/<chunk>.parquet   CITATIONS_SCHEMA, one row per cited URL
    <out>/collect/_done/<chunk>.json  commit marker, written after both parts
    <out>/citations.parquet           all committed citations in one file (what the audit reads)
    <out>/queries.csv                 the swept queries (query_id,query,query_type,language)
    <out>/collect/manifest.json       systems (without keys), counts by status and language

A chunk counts only once its marker exists: parts without a marker (a crash between the two writes)
are deleted when the next run starts, and that run asks their pairs again. A rerun skips every pair
that a committed chunk holds, failed ones included, unless ``retry_failed`` is set; then a retried
pair's new row replaces the old one (older rows of the same pair are removed from their chunks), so a
pair is never in the tables twice.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import posixpath
import random
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc

from crawler.base import RunStore
from crawler.layout import LAYOUT
from jobs.collectors.citations import parse_answer
from jobs.collectors.client import CallResult, EndpointClient, Pacer
from jobs.collectors.keys import KeyRing
from jobs.collectors.serp import load_serp
from jobs.collectors.systems import EndpointSystem, SerpSystem
from jobs.collectors.tables import (
    ANSWERS_SCHEMA,
    citation_rows,
    endpoint_answer_row,
    serp_answer_row,
)
from jobs.inputs import load_queries
from jobs.schemas import CITATIONS_SCHEMA, QUERIES_SCHEMA

log = logging.getLogger("sourcebench.collect")

#: The two tables of a sweep, by the folder of their chunk parts.
_TABLES = ((LAYOUT.collect_answers, ANSWERS_SCHEMA), (LAYOUT.collect_citations, CITATIONS_SCHEMA))


@dataclass
class Pending:
    """Rows waiting for the next commit."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)


class Sweep:
    """Ask every system every query and write the answers and citations tables into a run store.

    Args:
        store: The run directory.
        queries: The queries to sweep (:data:`QUERIES_SCHEMA`).
        systems: Endpoint and SERP systems.
        keyring: API keys (resolved here) and redaction.
        chunk_size: (system, query) pairs per committed chunk.
        retry_failed: Ask again the pairs whose committed status is not ``ok``.
        seed: Seed of the backoff jitter.
    """

    def __init__(
        self,
        store: RunStore,
        queries: pa.Table,
        systems: list[EndpointSystem | SerpSystem],
        keyring: KeyRing,
        *,
        chunk_size: int = 25,
        retry_failed: bool = False,
        seed: int = 0,
    ):
        self.store, self.queries, self.systems, self.keyring = store, queries, systems, keyring
        self.chunk_size, self.retry_failed, self.seed = chunk_size, retry_failed, seed
        self.keys: dict[str, str | None] = {}
        self.key_origins: dict[str, str] = {}
        for system in systems:
            if isinstance(system, EndpointSystem):
                key, origin = keyring.resolve(system.name, system.api_key, system.api_key_env)
                self.keys[system.name], self.key_origins[system.name] = key, origin
        self.pending = Pending()
        self.lock = asyncio.Lock()
        self.new_statuses: Counter[str] = Counter()

    # -- committed state ---------------------------------------------------------------------------
    def drop_uncommitted_parts(self) -> None:
        done = self.store.done_tasks(LAYOUT.collect)
        for folder in (LAYOUT.collect_answers, LAYOUT.collect_citations):
            for name in self.store.listdir(folder, suffix=".parquet"):
                chunk = name[: -len(".parquet")]
                if chunk not in done:
                    log.warning("removing %s/%s: its chunk was never committed", folder, name)
                    self.store.delete(LAYOUT.collect_part(folder, chunk))

    def committed_answers(self, columns: list[str]) -> pa.Table:
        """Some columns of the committed answers (not the raw responses: they can be large)."""
        parts = [
            self.store.read_part(posixpath.join(LAYOUT.collect_answers, name), columns)
            for name in self.store.listdir(LAYOUT.collect_answers, suffix=".parquet")
        ]
        return pa.concat_tables(parts) if parts else ANSWERS_SCHEMA.empty_table().select(columns)

    def committed_status(self) -> dict[tuple[str, str], str]:
        table = self.committed_answers(["system", "query_id", "status"])
        return {(r["system"], r["query_id"]): r["status"] for r in table.to_pylist()}

    def remove_superseded(self) -> int:
        """Keep only the newest row of each pair; rewrite the chunks that held older ones."""
        table = self.committed_answers(["system", "query_id", "collected_at", "chunk_id"])
        newest: dict[tuple[str, str], tuple[datetime, str]] = {}
        for row in table.to_pylist():
            key = (row["system"], row["query_id"])
            if key not in newest or (row["collected_at"], row["chunk_id"]) > newest[key]:
                newest[key] = (row["collected_at"], row["chunk_id"])
        stale: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for row in table.to_pylist():
            key = (row["system"], row["query_id"])
            if newest[key][1] != row["chunk_id"]:
                stale[row["chunk_id"]].add(key)
        for chunk, pairs in stale.items():
            for folder, schema in _TABLES:
                path = LAYOUT.collect_part(folder, chunk)
                part = self.store.read_table(path, schema=schema)
                keep = [
                    (s, q) not in pairs
                    for s, q in zip(part["system"].to_pylist(), part["query_id"].to_pylist(), strict=True)
                ]
                self.store.write_table(path, part.filter(pa.array(keep, pa.bool_())))
        return sum(len(p) for p in stale.values())

    # -- commits -----------------------------------------------------------------------------------
    def commit(self, answers: list[dict[str, Any]], citations: list[dict[str, Any]], chunk_id: str) -> None:
        """Write one chunk's two parts, then its marker (the marker is what makes it count)."""
        self.store.write_table(
            LAYOUT.collect_part(LAYOUT.collect_citations, chunk_id),
            pa.Table.from_pylist(citations, schema=CITATIONS_SCHEMA),
        )
        self.store.write_table(
            LAYOUT.collect_part(LAYOUT.collect_answers, chunk_id),
            pa.Table.from_pylist(answers, schema=ANSWERS_SCHEMA),
        )
        statuses = Counter(row["status"] for row in answers)
        self.store.mark_done(
            LAYOUT.collect, chunk_id, {"pairs": len(answers), "citations": len(citations), **statuses}
        )
        self.new_statuses.update(statuses)
        log.info(
            "committed %s: %d answers (%s), %d citations",
            chunk_id,
            len(answers),
            dict(statuses),
            len(citations),
        )

    async def flush(self, force: bool = False) -> None:
        async with self.lock:
            if not self.pending.answers or (len(self.pending.answers) < self.chunk_size and not force):
                return
            batch, self.pending = self.pending, Pending()
            chunk_id = f"chunk-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
            for row in batch.answers:
                row["chunk_id"] = chunk_id
            await asyncio.to_thread(self.commit, batch.answers, batch.citations, chunk_id)

    # -- systems -----------------------------------------------------------------------------------
    def collect_serp(self, system: SerpSystem, committed: dict[tuple[str, str], str]) -> None:
        wanted = [q for q in self.queries.to_pylist() if (system.name, q["query_id"]) not in committed]
        if not wanted:
            return
        citations = load_serp(
            system.results_path, system.name, pa.Table.from_pylist(wanted, schema=QUERIES_SCHEMA)
        )
        counts = Counter(citations["query_id"].to_pylist())
        chunk_id = f"serp-{uuid.uuid4().hex[:12]}"
        now = datetime.now(UTC)
        answers = [
            serp_answer_row(
                system=system.name,
                query=q,
                n_results=counts[q["query_id"]],
                chunk_id=chunk_id,
                collected_at=now,
            )
            for q in wanted
        ]
        self.commit(answers, citations.to_pylist(), chunk_id)

    async def ask(self, client: EndpointClient, query: dict[str, Any]) -> None:
        system = client.system
        result = await client.ask(query["query"])
        parsed = None
        if result.status == "ok":
            try:
                parsed = parse_answer(result.body, system.api)
            except ValueError as exc:
                result = CallResult(
                    status="bad_response",
                    attempts=result.attempts,
                    elapsed_s=result.elapsed_s,
                    latency_s=result.latency_s,
                    http_status=result.http_status,
                    body=result.body,
                    error=str(exc),
                )
        if result.status != "ok":
            log.warning(
                "%s / query %s: %s after %d attempt(s): %s",
                system.name,
                query["query_id"],
                result.status,
                result.attempts,
                (result.error or "")[:200],
            )
        row = endpoint_answer_row(
            system=system.name,
            api=system.api,
            model_name=system.model_name,
            query=query,
            result=result,
            parsed=parsed,
            keyring=self.keyring,
            chunk_id="",
            collected_at=datetime.now(UTC),
        )
        self.pending.answers.append(row)
        if parsed:
            self.pending.citations += citation_rows(system.name, query, parsed, self.keyring)
        await self.flush()

    async def collect_endpoints(self, committed: dict[tuple[str, str], str]) -> None:
        queries = self.queries.to_pylist()
        groups: dict[str, list[tuple[EndpointSystem, dict[str, Any]]]] = defaultdict(list)
        concurrency: dict[str, int] = {}
        quota: dict[str, float | None] = {}
        for system in self.systems:
            if not isinstance(system, EndpointSystem):
                continue
            concurrency.setdefault(system.api_base, system.policy.max_concurrency)
            quota.setdefault(system.api_base, system.policy.requests_per_minute)
            for query in queries:
                status = committed.get((system.name, query["query_id"]))
                if status is None or (self.retry_failed and status != "ok"):
                    groups[system.api_base].append((system, query))
        if not groups:
            return
        rng = random.Random(self.seed)
        limits = httpx.Limits(max_connections=sum(concurrency.values()) + 4)
        async with httpx.AsyncClient(limits=limits, follow_redirects=False) as http:
            pacers = {base: Pacer(per_minute) for base, per_minute in quota.items()}
            clients = {
                s.name: EndpointClient(s, self.keys[s.name], http, self.keyring, pacers[s.api_base], rng)
                for s in self.systems
                if isinstance(s, EndpointSystem)
            }

            async def worker(todo: asyncio.Queue) -> None:
                while not todo.empty():
                    system, query = todo.get_nowait()
                    await self.ask(clients[system.name], query)

            workers = []
            for base, pairs in groups.items():
                todo: asyncio.Queue = asyncio.Queue()
                for pair in pairs:
                    todo.put_nowait(pair)
                workers += [worker(todo) for _ in range(min(concurrency[base], len(pairs)))]
                log.info(
                    "endpoint %s: %d queries, %d in flight at most",
                    self.keyring.redact(base),
                    len(pairs),
                    concurrency[base],
                )
            await asyncio.gather(*workers)
        await self.flush(force=True)

    # -- outputs -----------------------------------------------------------------------------------
    def write_queries(self) -> pa.Table:
        merged = {}
        if self.store.exists(LAYOUT.collect_queries):
            for row in load_queries(self.store.uri_of(LAYOUT.collect_queries)).to_pylist():
                merged[row["query_id"]] = row
        for row in self.queries.to_pylist():
            merged[row["query_id"]] = row
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=QUERIES_SCHEMA.names, lineterminator="\n")
        writer.writeheader()
        for row in merged.values():
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        self.store.write_text(LAYOUT.collect_queries, buf.getvalue())
        return pa.Table.from_pylist(list(merged.values()), schema=QUERIES_SCHEMA)

    def write_citations(self) -> pa.Table:
        table = self.store.read_table(LAYOUT.collect_citations, schema=CITATIONS_SCHEMA)
        order = pc.sort_indices(
            table, [("system", "ascending"), ("query_id", "ascending"), ("rank", "ascending")]
        )
        table = table.take(order)
        self.store.write_table(LAYOUT.collect_citations_table, table)
        return table

    def write_manifest(self, citations: pa.Table, queries: pa.Table, superseded: int) -> dict[str, Any]:
        answers = self.committed_answers(["system", "status"]).to_pylist()
        by_system: dict[str, Counter[str]] = defaultdict(Counter)
        for row in answers:
            by_system[row["system"]][row["status"]] += 1
        manifest = {
            "stage": LAYOUT.collect,
            "finished_at": datetime.now(UTC).isoformat(),
            "systems": [
                {
                    **s.public_view(),
                    **({"api_key_source": self.key_origins[s.name]} if s.name in self.key_origins else {}),
                }
                for s in self.systems
            ],
            "queries": queries.num_rows,
            "queries_by_language": dict(Counter(queries["language"].to_pylist())),
            "answers_by_system_status": {k: dict(v) for k, v in by_system.items()},
            "citations": citations.num_rows,
            "this_run": {"statuses": dict(self.new_statuses), "superseded_rows_removed": superseded},
            "schemas": {
                k: s.metadata[b"version"].decode()
                for k, s in (("answers", ANSWERS_SCHEMA), ("citations", CITATIONS_SCHEMA))
            },
        }
        text = self.keyring.redact(json.dumps(manifest, indent=2, ensure_ascii=False, default=str))
        self.store.write_text(LAYOUT.collect_manifest, text)
        return manifest

    def run(self) -> dict[str, Any]:
        """Run the sweep to the end; returns the manifest."""
        self.drop_uncommitted_parts()
        superseded = self.remove_superseded()
        committed = self.committed_status()
        for system in self.systems:
            if isinstance(system, SerpSystem):
                self.collect_serp(system, committed)
        asyncio.run(self.collect_endpoints(committed))
        superseded += self.remove_superseded()
        queries = self.write_queries()
        citations = self.write_citations()
        return self.write_manifest(citations, queries, superseded)
