"""Export an audit run back to the official enriched JSON, one file per system.

The files load in the official tools (``compute_metrics.py --run NAME=<system>.enriched.json``) and
in ours (``sourcebench reduce``), and give the same leaderboard as the run itself. Each query record
carries ``aggregated_sources`` with the official fields (``agg_source_id``, ``url_canonical``,
``url_examples``, ``selected_topk``, ``text_content``, ``text_content_length``, ``domain_category``,
``search_result_date``, ``search_result_last_updated``, ``title``, ``content_vector``,
``content_vector_justification``, ``scoring_meta``) plus ours (``url_key``, ``page_status``,
``judge_status``). A source whose page failed or was not judged keeps null scores, as in the run.
When the run's reduce had a SERP, each source also carries the official rank columns
(``avg_ge_freq``, ``relative_se_rank``, ``normalized_reciprocal_se_rank``, ``reciprocal_se_rank``),
each query record the two overlap percentages, and ``<system>.geo_scores.json`` is the official
rank file (``compute_metrics.py --rank-run NAME=<system>.geo_scores.json``).

Usage: ``python -m jobs.export --run RUN_URI --out DIR``
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from crawler.base import InputError, RunStore
from crawler.layout import LAYOUT
from crawler.schema import PAGE_SCHEMA
from jobs.leaderboard.metrics import RANK_COLUMNS
from jobs.leaderboard.writers import json_query_id, safe_file_name
from judge import content_vectors, read_judgments
from judge.rubric import DIMENSION_KEYS
from judge.vectors import VECTOR_COLUMNS

#: The official rank columns of a source and of a query (jobs.leaderboard.ranks).
SOURCE_RANK_COLUMNS = RANK_COLUMNS[:4]
QUERY_RANK_COLUMNS = RANK_COLUMNS[4:]
PAGE_FIELDS = ("url_key", "text_full", "title", "published_date", "modified_date", "domain_category")


def integer_score(value: float | None) -> int | float | None:
    """Scores are integers 1-5 in the official files; keep a float only if it is not whole."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


def by_key(table: pa.Table, *keys: str) -> dict[tuple, dict[str, Any]]:
    return {tuple(row[k] for k in keys): row for row in table.to_pylist()}


def enriched_records(store: RunStore) -> dict[str, list[dict[str, Any]]]:
    """system -> official enriched query records of one audit run."""
    for relpath in (LAYOUT.scores, LAYOUT.queries, LAYOUT.citations, LAYOUT.pages):
        if not store.exists(relpath):
            raise InputError(store.uri_of(relpath), "not found: is this an audit run (sourcebench audit)?")
    scores = store.read_table(LAYOUT.scores)
    queries = {row["query_id"]: row for row in store.read_table(LAYOUT.queries).to_pylist()}
    citations = store.read_table(LAYOUT.citations)
    answers = {
        (r["system"], r["query_id"]): r["answer_text"] for r in citations.to_pylist() if r["answer_text"]
    }
    spellings: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for row in scores.select(["model_name", "query_id", "url_key", "cited_url"]).to_pylist():
        spellings[(row["model_name"], row["query_id"], row["url_key"])].append(row["cited_url"])
    pages = by_key(store.read_table(LAYOUT.pages, PAGE_SCHEMA).select(list(PAGE_FIELDS)), "url_key")
    vectors = by_key(content_vectors(read_judgments(store.uri, VECTOR_COLUMNS)), "url_key", "query_id")
    ranks = rank_rows(store)
    exported_at = datetime.now(UTC).isoformat(timespec="seconds")

    records: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in scores.to_pylist():
        system, query_id = row["model_name"], row["query_id"]
        query = queries.get(query_id, {})
        record = records[system].setdefault(
            query_id,
            {
                "query_id": json_query_id(query_id),
                "query_text": query.get("query", ""),
                "query_type": row["query_type"],
                "ai_model_name": system,
                "runs": [{"answer_text": answers.get((system, query_id), "")}],
                "aggregated_sources": [],
            },
        )
        page = pages.get((row["url_key"],), {})
        vector = vectors.get((row["url_key"], query_id), {})
        text = page.get("text_full") or ""
        record["aggregated_sources"].append(
            {
                "agg_source_id": row["agg_source_id"],
                "url_canonical": row["source_url"],
                "url_examples": list(dict.fromkeys(spellings[(system, query_id, row["url_key"])])),
                "selected_topk": True,
                "text_content": text,
                "text_content_length": len(text),
                "domain_category": page.get("domain_category"),
                "search_result_date": page.get("published_date"),
                "search_result_last_updated": page.get("modified_date"),
                "title": page.get("title") or "",
                "content_vector": {key: integer_score(row[key]) for key in DIMENSION_KEYS},
                "content_vector_justification": {
                    key: vector.get(f"{key}_justification") for key in DIMENSION_KEYS
                },
                "scoring_meta": {"run_name": store.uri, "scored_at": exported_at},
                "url_key": row["url_key"],
                "page_status": row.get("page_status"),
                "judge_status": row.get("judge_status"),
                **{
                    k: v
                    for k, v in ranks.get((system, query_id, row["agg_source_id"]), {}).items()
                    if k in SOURCE_RANK_COLUMNS
                },
            }
        )
        query_ranks = ranks.get((system, query_id, row["agg_source_id"]), {})
        if "percentage_ge_sources_not_in_se_sources" in query_ranks:
            for key in QUERY_RANK_COLUMNS:
                record[key] = query_ranks[key]
    return {system: list(by_query.values()) for system, by_query in records.items()}


def rank_rows(store: RunStore) -> dict[tuple[str, str, str], dict[str, float | None]]:
    """(system, query_id, agg_source_id) -> the official rank columns the reduce filled (none: {})."""
    path = LAYOUT.source_metrics_table
    if not store.exists(path):
        return {}
    table = store.read_table(path).select(["model_name", "query_id", "agg_source_id", *RANK_COLUMNS])
    found = {}
    for row in table.to_pylist():
        values = {k: (None if row[k] is None or math.isnan(row[k]) else row[k]) for k in RANK_COLUMNS}
        if any(v is not None for v in values.values()):
            found[(row["model_name"], row["query_id"], row["agg_source_id"])] = values
    return found


def rank_file(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The official ``--rank-run`` file of one system's enriched records (None without rank data)."""
    results = []
    for record in records:
        if "percentage_ge_sources_not_in_se_sources" not in record:
            continue
        results.append(
            {
                "query_id": record["query_id"],
                "percentage_ge_sources_not_in_se_sources": record["percentage_ge_sources_not_in_se_sources"],
                "ge_sources": [
                    {"agg_source_id": s["agg_source_id"], **{k: s.get(k) for k in SOURCE_RANK_COLUMNS}}
                    for s in record["aggregated_sources"]
                ],
            }
        )
    return {"results": results} if results else None


def export_enriched_json(run_uri: str, out_uri: str) -> dict[str, str]:
    """Write ``<out>/<system>.enriched.json`` for every system of a run; returns system -> file URI."""
    out = RunStore(out_uri)
    written = {}
    for system, records in enriched_records(RunStore(run_uri)).items():
        name = f"{safe_file_name(system)}.enriched.json"
        out.write_bytes(name, json.dumps(records, indent=2, ensure_ascii=False).encode("utf-8"))
        written[system] = out.uri_of(name)
        ranks = rank_file(records)
        if ranks is not None:  # for compute_metrics.py --rank-run SYSTEM=<file>
            rank_name = f"{safe_file_name(system)}.geo_scores.json"
            out.write_bytes(rank_name, json.dumps(ranks, indent=2, ensure_ascii=False).encode("utf-8"))
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="the audit run (local folder or s3://)")
    parser.add_argument("--out", required=True, help="folder for <system>.enriched.json files")


def run(args: argparse.Namespace) -> int:
    for system, uri in export_enriched_json(args.run, args.out).items():
        print(f"{system}: {uri}")
    return 0


if __name__ == "__main__":
    from jobs.cli import run_module

    run_module("export")
