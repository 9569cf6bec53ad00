"""The answers table (one row per system x query) and the rows that the collector writes.

Citations go to :data:`jobs.schemas.CITATIONS_SCHEMA` (one row per cited URL); everything else about a
call — status, raw response, usage, latency — goes to :data:`ANSWERS_SCHEMA`. Every string that came
from an endpoint passes through :meth:`KeyRing.redact` first.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pyarrow as pa

from jobs.collectors.citations import ParsedAnswer
from jobs.collectors.client import CallResult
from jobs.collectors.keys import KeyRing

ANSWERS_SCHEMA_VERSION = 1

ANSWERS_SCHEMA = pa.schema(
    [
        pa.field("system", pa.string(), nullable=False),  # system name (as in citations)
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("query_text", pa.string()),
        pa.field("query_type", pa.string()),
        pa.field("language", pa.string()),  # the query's language tag
        pa.field("kind", pa.string(), nullable=False),  # endpoint | serp
        pa.field("api", pa.string()),  # chat | responses | null for serp
        pa.field("model_name", pa.string()),
        pa.field("status", pa.string(), nullable=False),  # see client.ANSWER_STATUSES
        pa.field("http_status", pa.int32()),  # of the last attempt
        pa.field("error", pa.string()),  # redacted error text of the last attempt
        pa.field("attempts", pa.int32()),
        pa.field("latency_s", pa.float64()),  # last attempt: request sent -> response read
        pa.field("elapsed_s", pa.float64()),  # all attempts and waits
        pa.field("answer_text", pa.string()),
        pa.field("finish_reason", pa.string()),  # Chat finish_reason, Responses incomplete reason/status
        pa.field("citation_source", pa.string()),  # annotations | search_results | answer_text | none
        pa.field("n_citations", pa.int32()),
        pa.field("prompt_tokens", pa.int64()),
        pa.field("completion_tokens", pa.int64()),
        pa.field("total_tokens", pa.int64()),
        pa.field("usage_json", pa.string()),  # the response's usage object, JSON
        pa.field("raw_response_json", pa.string()),  # the whole response body, JSON, redacted
        pa.field("collected_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("chunk_id", pa.string(), nullable=False),  # the commit unit that holds the row
    ],
    metadata={"schema": "answers", "version": str(ANSWERS_SCHEMA_VERSION)},
)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def token_counts(usage: dict[str, Any] | None) -> tuple[int | None, int | None, int | None]:
    """(prompt, completion, total) tokens of a Chat (prompt/completion) or Responses (input/output) usage."""
    if not usage:
        return None, None, None
    prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    total = _int(usage.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return prompt, completion, total


def endpoint_answer_row(
    *,
    system: str,
    api: str,
    model_name: str,
    query: dict[str, Any],
    result: CallResult,
    parsed: ParsedAnswer | None,
    keyring: KeyRing,
    chunk_id: str,
    collected_at: datetime,
) -> dict[str, Any]:
    usage = parsed.usage if parsed else None
    prompt, completion, total = token_counts(usage)
    return {
        "system": system,
        "query_id": query["query_id"],
        "query_text": query["query"],
        "query_type": query.get("query_type"),
        "language": query.get("language"),
        "kind": "endpoint",
        "api": api,
        "model_name": model_name,
        "status": result.status,
        "http_status": result.http_status,
        "error": keyring.redact(result.error),
        "attempts": result.attempts,
        "latency_s": result.latency_s,
        "elapsed_s": result.elapsed_s,
        "answer_text": keyring.redact(parsed.text) if parsed else None,
        "finish_reason": parsed.finish_reason if parsed else None,
        "citation_source": parsed.citation_source if parsed else None,
        "n_citations": len(parsed.urls) if parsed else 0,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "usage_json": json.dumps(usage, ensure_ascii=False) if usage else None,
        "raw_response_json": keyring.redact(json.dumps(result.body, ensure_ascii=False))
        if result.body
        else None,
        "collected_at": collected_at,
        "chunk_id": chunk_id,
    }


def serp_answer_row(
    *, system: str, query: dict[str, Any], n_results: int, chunk_id: str, collected_at: datetime
) -> dict[str, Any]:
    row = dict.fromkeys(ANSWERS_SCHEMA.names)
    row.update(
        system=system,
        query_id=query["query_id"],
        query_text=query["query"],
        query_type=query.get("query_type"),
        language=query.get("language"),
        kind="serp",
        status="ok",
        attempts=0,
        n_citations=n_results,
        citation_source="search_results",
        collected_at=collected_at,
        chunk_id=chunk_id,
    )
    return row


def citation_rows(
    system: str, query: dict[str, Any], parsed: ParsedAnswer, keyring: KeyRing
) -> list[dict[str, Any]]:
    """One :data:`CITATIONS_SCHEMA` row per cited URL, ranked in citation order."""
    answer = keyring.redact(parsed.text)
    return [
        {
            "system": system,
            "query_id": query["query_id"],
            "url": keyring.redact(url),
            "rank": rank,
            "query_text": query["query"],
            "answer_text": answer,
            "language": query.get("language"),
            "agg_source_id": None,
            "selected_topk": None,
        }
        for rank, url in enumerate(parsed.urls, start=1)
    ]
