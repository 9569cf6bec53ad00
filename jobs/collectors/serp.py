"""SERP inputs: ranked search results per query, read as the citations of a system of kind ``serp``.

This lets the overlap analysis compare what generative engines cite with what a search engine ranks.
Accepted files (UTF-8):

* CSV with ``query_id,rank,url`` (optional ``query``/``query_text``, ``title``, ``language``);
* JSONL, one object per line: either flat ``{"query_id", "rank", "url"}`` or a query record as below;
* JSON: a list of ``{"query_id", "query"?, "results": [{"url", "rank"?, "title"?} | "url", ...]}``, or a
  mapping ``{"<query_id>": ["url", ...]}``.

A missing rank is the result's position (1-based) among that query's results in file order.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa

from crawler.base import InputError
from jobs.inputs import (
    CitationRows,
    decode_utf8,
    iter_csv,
    iter_jsonl,
    normalize_query_id,
    parse_json,
    read_input_bytes,
)


def _query_records(path: str, data: Any) -> list[tuple[str, Any, Any, list[Any]]]:
    """(record path, query_id, query text, results) for each query record of a JSON document."""
    if isinstance(data, dict):
        return [(f"{qid}", qid, None, results) for qid, results in data.items()]
    if not isinstance(data, list):
        raise InputError(path, "expected a list of query records or a mapping of query_id to results")
    records = []
    for i, record in enumerate(data):
        if not isinstance(record, dict):
            raise InputError(path, "expected an object", field=f"[{i}]")
        records.append(
            (
                f"[{i}]",
                record.get("query_id"),
                record.get("query") or record.get("query_text"),
                record.get("results"),
            )
        )
    return records


def load_serp(path: str, system: str, queries: pa.Table | None = None) -> pa.Table:
    """Read a SERP file into :data:`jobs.schemas.CITATIONS_SCHEMA` rows (``system`` = the engine name).

    Args:
        path: The results file (local or ``s3://``).
        system: The engine's name in the outputs.
        queries: The sweep's queries; when given, query text and language are filled from it and results
            for queries outside it are left out.
    """
    known = {}
    if queries is not None:
        for row in queries.to_pylist():
            known[row["query_id"]] = row
    rows = CitationRows(path)
    positions: dict[str, int] = defaultdict(int)

    def add(
        where: str, line: int | None, query_id: Any, url: Any, rank: Any, text: Any, language: Any
    ) -> None:
        qid = normalize_query_id(query_id)
        if qid is None:
            raise InputError(path, "missing query_id", line=line, field=where + "query_id")
        positions[qid] += 1
        if known and qid not in known:
            return
        info = known.get(qid, {})
        rows.add(
            where,
            line,
            {
                "system": system,
                "query_id": qid,
                "url": url,
                "rank": positions[qid] if rank in (None, "") else rank,
                "query_text": info.get("query") or text,
                "language": info.get("language") or language,
            },
        )

    text = decode_utf8(path, read_input_bytes(path))
    lower = path.lower()
    if lower.endswith(".csv"):
        for line, rec in iter_csv(path, text, ("query_id", "url")):
            add(
                "",
                line,
                rec["query_id"],
                rec["url"],
                rec.get("rank"),
                rec.get("query") or rec.get("query_text"),
                rec.get("language"),
            )
        return rows.table()
    if lower.endswith((".jsonl", ".ndjson")):
        records = []
        for line, rec in iter_jsonl(path, text):
            if "results" in rec:
                records.append(
                    (f"line {line}: ", rec.get("query_id"), rec.get("query"), rec["results"], line)
                )
            else:
                add(
                    "",
                    line,
                    rec.get("query_id"),
                    rec.get("url"),
                    rec.get("rank"),
                    rec.get("query"),
                    rec.get("language"),
                )
    elif lower.endswith(".json"):
        records = [(*r, None) for r in _query_records(path, parse_json(path, text))]
    else:
        raise InputError(path, "unknown SERP format: use .csv, .jsonl or .json")
    for where, qid, qtext, results, line in records:
        prefix = "" if line is not None else where
        if not isinstance(results, list):
            raise InputError(
                path, "expected a list of results", line=line, field=f"{prefix}.results".lstrip(".")
            )
        for j, result in enumerate(results):
            field = f"{prefix}.results[{j}].".lstrip(".")
            if isinstance(result, str):
                add(field, line, qid, result, None, qtext, None)
            elif isinstance(result, dict):
                add(field, line, qid, result.get("url"), result.get("rank"), qtext, result.get("language"))
            else:
                raise InputError(
                    path, "expected a URL or an object with 'url'", line=line, field=field.rstrip(".")
                )
    return rows.table()
