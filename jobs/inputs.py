"""Readers for user inputs: queries, citations (ours and the official formats) and official scored JSON.

Every reader validates as it goes and raises :class:`crawler.errors.InputError` naming the file, the
line (text formats) or record path (JSON formats) and the field. Accepted formats:

* queries CSV: ``query_id,query,query_type`` (the official columns; the older official spelling
  ``query_ID,query,source`` is accepted too), optional ``language``;
* citations: JSONL, CSV or Parquet with ``system, query_id, url, rank`` and optional
  ``query_text, answer_text, language``; the official ``answer_url_bundle`` JSON; the official scraped or
  enriched JSON (a list of query records with ``aggregated_sources``), keeping ``agg_source_id`` and
  ``selected_topk``;
* official scraped/enriched JSON as page records, to judge the text they carry (:func:`load_official_pages`);
* official enriched JSON as scores for the reduce (:func:`load_enriched_scores`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from crawler.base import InputError, resolve_uri
from crawler.domains import domain_category, registered_domain
from crawler.records import page_record, records_to_table
from crawler.urls import InvalidURL, canonicalize_url, url_key
from jobs.schemas import CITATIONS_SCHEMA, QUERIES_SCHEMA, SOURCE_SCORES_SCHEMA
from judge.rubric import DIMENSION_KEYS

#: Accepted spellings of each queries column (the official repo has used both).
QUERY_COLUMN_ALIASES = {
    "query_id": ("query_id", "query_ID"),
    "query": ("query", "query_text"),
    "query_type": ("query_type", "source"),
}
CITATION_REQUIRED = ("system", "query_id", "url", "rank")
CITATION_OPTIONAL = ("query_text", "answer_text", "language", "agg_source_id", "selected_topk")


# -- low-level readers ---------------------------------------------------------------------------------
def read_input_bytes(path: str) -> bytes:
    """Read a local or ``s3://`` input file whole."""
    fs, inner = resolve_uri(str(path))
    kind = fs.get_file_info(inner).type
    if kind == pafs.FileType.Directory:
        raise InputError(path, "is a directory, expected a file")
    if kind != pafs.FileType.File:
        raise InputError(path, "file not found")
    with fs.open_input_stream(inner) as src:
        return src.read()


def decode_utf8(path: str, data: bytes) -> str:
    """Decode UTF-8 (a BOM is dropped); a bad byte is reported with its line number."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            path,
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); save the file as UTF-8",
            line=line,
        ) from None


def parse_json(path: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None


def iter_jsonl(path: str, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL text."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", line=number) from None
        if not isinstance(record, dict):
            raise InputError(
                path, f"expected a JSON object per line, got {type(record).__name__}", line=number
            )
        yield number, record


def csv_header(path: str, text: str) -> list[str]:
    """The header row of a CSV text (empty for an empty text)."""
    try:
        return next(csv.reader(io.StringIO(text, newline="")), [])
    except csv.Error as exc:
        raise InputError(path, f"malformed CSV header: {exc}", line=1) from None


def iter_csv(path: str, text: str, required: Iterable[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line_number, row)`` of a CSV text after checking that the header has ``required``.

    A malformed row (a field over the CSV module's size limit, a stray NUL byte) is an InputError
    naming its line.
    """
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = csv_header(path, text)
    missing = [col for col in required if col not in header]
    if missing:
        raise InputError(
            path,
            f"missing column(s) {', '.join(missing)}; header is {', '.join(header) or '(empty)'}",
            line=1,
            field=missing[0],
        )
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            # line_num counts the lines before the record that failed
            raise InputError(path, f"malformed CSV: {exc}", line=reader.line_num + 1) from None
        if None in row:  # more cells than header columns
            raise InputError(
                path, f"{len(header) + len(row[None])} cells for {len(header)} columns", line=reader.line_num
            )
        yield reader.line_num, row


# -- normalisation -------------------------------------------------------------------------------------
def normalize_query_id(value: Any) -> str | None:
    """The official normalisation (digit strings and ints are the same id), as a string."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    text = str(value).strip()
    if text.isdigit():
        return str(int(text))
    return text or None


def official_score(value: Any) -> float | None:
    """The official ``safe_float``: numbers and numeric strings count, anything else is missing.

    One deliberate difference: NaN and infinities are missing here (the official script would let
    them poison every mean).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and value.strip():
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def checked_score(source: str, value: Any, *, field: str, line: int | None = None) -> float | None:
    """:func:`official_score`, and a number outside the official 1-5 scale is an InputError."""
    score = official_score(value)
    if score is not None and not 1 <= score <= 5:
        raise InputError(source, f"score {value!r} is outside the 1-5 scale", line=line, field=field)
    return score


def checked_count(source: str, value: Any, *, field: str, line: int | None = None) -> float | None:
    """:func:`official_score` for a count (a text length): a negative number is an InputError."""
    count = official_score(value)
    if count is not None and count < 0:
        raise InputError(source, f"negative count {value!r}", line=line, field=field)
    return count


def check_url(path: str, url: Any, *, line: int | None, field: str) -> str:
    text = str(url or "").strip()
    parts = urlsplit(text)
    if parts.scheme.lower() not in {"http", "https"} or not parts.netloc:
        raise InputError(path, f"not an http(s) URL: {text!r}", line=line, field=field)
    return text


# -- queries -------------------------------------------------------------------------------------------
def load_queries(path: str) -> pa.Table:
    """Load a queries CSV into a :data:`QUERIES_SCHEMA` table (ids unique, all fields non-empty)."""
    text = decode_utf8(path, read_input_bytes(path))
    header = csv_header(path, text)
    columns = {}
    for canonical, aliases in QUERY_COLUMN_ALIASES.items():
        found = next((alias for alias in aliases if alias in header), None)
        if found is None:
            raise InputError(
                path,
                f"missing column {canonical!r}; header is {', '.join(header) or '(empty)'}",
                line=1,
                field=canonical,
            )
        columns[canonical] = found
    rows: dict[str, list[Any]] = {name: [] for name in QUERIES_SCHEMA.names}
    seen: dict[str, int] = {}
    for line, row in iter_csv(path, text, columns.values()):
        values = {name: (row.get(col) or "").strip() for name, col in columns.items()}
        for name, value in values.items():
            if not value:
                raise InputError(path, "empty value", line=line, field=columns[name])
        query_id = normalize_query_id(values["query_id"])
        if query_id in seen:
            raise InputError(
                path,
                f"duplicate query_id {query_id!r} (first on line {seen[query_id]})",
                line=line,
                field=columns["query_id"],
            )
        seen[query_id] = line
        rows["query_id"].append(query_id)
        rows["query"].append(values["query"])
        rows["query_type"].append(values["query_type"])
        rows["language"].append((row.get("language") or "").strip() or None)
    return pa.Table.from_pydict(rows, schema=QUERIES_SCHEMA)


# -- citations -----------------------------------------------------------------------------------------
class CitationRows:
    """Accumulates validated citation rows; rejects a repeated (system, query_id, rank)."""

    def __init__(self, path: str):
        self.path = path
        self.columns: dict[str, list[Any]] = {name: [] for name in CITATIONS_SCHEMA.names}
        self.seen: dict[tuple[str, str, int], str] = {}

    def add(self, where: str, line: int | None, record: dict[str, Any]) -> None:
        """Add one citation; ``where`` prefixes field names for JSON record paths (``runs[2].``)."""
        for name in CITATION_REQUIRED:
            value = record.get(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                raise InputError(self.path, "missing value", line=line, field=where + name)
        system = str(record["system"]).strip()
        query_id = normalize_query_id(record["query_id"])
        url = check_url(self.path, record["url"], line=line, field=where + "url")
        rank = parse_rank(self.path, record["rank"], line=line, field=where + "rank")
        key = (system, query_id, rank)
        here = f"line {line}" if line is not None else where.rstrip(".")
        if key in self.seen:
            raise InputError(
                self.path,
                f"duplicate citation rank {rank} for system {system!r}, query {query_id!r} "
                f"(first at {self.seen[key]})",
                line=line,
                field=where + "rank",
            )
        self.seen[key] = here
        self.columns["system"].append(system)
        self.columns["query_id"].append(query_id)
        self.columns["url"].append(url)
        self.columns["rank"].append(rank)
        for name in CITATION_OPTIONAL:
            value = record.get(name)
            if name == "selected_topk":
                self.columns[name].append(
                    parse_optional_bool(self.path, value, line=line, field=where + name)
                )
            else:
                self.columns[name].append(None if value in (None, "") else str(value))

    def table(self) -> pa.Table:
        return pa.Table.from_pydict(self.columns, schema=CITATIONS_SCHEMA)


def parse_rank(path: str, value: Any, *, line: int | None, field: str) -> int:
    try:
        rank = int(str(value).strip())
    except ValueError:
        raise InputError(
            path, f"rank must be a positive integer, got {value!r}", line=line, field=field
        ) from None
    if rank < 1 or isinstance(value, bool):
        raise InputError(path, f"rank must be a positive integer, got {value!r}", line=line, field=field)
    return rank


def parse_optional_bool(path: str, value: Any, *, line: int | None, field: str) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise InputError(path, f"expected true/false, got {value!r}", line=line, field=field)


def load_citations(paths: str | Iterable[str], system: str | None = None) -> pa.Table:
    """Load one or more citation files into one :data:`CITATIONS_SCHEMA` table.

    Args:
        paths: File path(s) or ``s3://`` URIs; the format is detected from the extension and content.
        system: System name for official scraped/enriched JSON files whose records lack ``ai_model_name``
            (and an override for them when given).
    """
    if isinstance(paths, str | os.PathLike):
        paths = [str(paths)]
    tables = [load_citation_file(str(p), system) for p in paths]
    table = pa.concat_tables(tables) if tables else CITATIONS_SCHEMA.empty_table()
    check_unique_citations(table, [str(p) for p in paths])
    return table


def check_unique_citations(table: pa.Table, paths: list[str]) -> None:
    """Across files, a (system, query_id, rank) may appear once."""
    if len(paths) < 2 or table.num_rows == 0:
        return
    counts = table.group_by(["system", "query_id", "rank"]).aggregate([("url", "count")])
    dup = counts.filter(pa.compute.greater(counts["url_count"], 1))
    if dup.num_rows:
        row = dup.slice(0, 1).to_pylist()[0]
        raise InputError(
            ", ".join(paths),
            f"citation rank {row['rank']} of system {row['system']!r}, query "
            f"{row['query_id']!r} appears in more than one file",
            field="rank",
        )


def load_citation_file(path: str, system: str | None = None) -> pa.Table:
    lower = path.lower()
    rows = CitationRows(path)
    if lower.endswith(".parquet"):
        return citations_from_parquet(path, rows)
    text = decode_utf8(path, read_input_bytes(path))
    if lower.endswith((".jsonl", ".ndjson")):
        for line, record in iter_jsonl(path, text):
            rows.add("", line, record)
    elif lower.endswith(".csv"):
        for line, record in iter_csv(path, text, CITATION_REQUIRED):
            rows.add("", line, record)
    elif lower.endswith(".json"):
        citations_from_official_json(path, parse_json(path, text), rows, system)
    else:
        raise InputError(path, "unknown citations format: use .jsonl, .csv, .parquet or official .json")
    return rows.table()


def citations_from_parquet(path: str, rows: CitationRows) -> pa.Table:
    fs, inner = resolve_uri(path)
    table = pq.read_table(inner, filesystem=fs)
    missing = [c for c in CITATION_REQUIRED if c not in table.column_names]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)}", field=missing[0])
    for index, record in enumerate(table.to_pylist()):
        rows.add(f"row[{index}].", None, record)
    return rows.table()


def citations_from_official_json(path: str, data: Any, rows: CitationRows, system: str | None) -> None:
    """The official ``answer_url_bundle`` (a dict) or scraped/enriched JSON (a list of query records)."""
    if isinstance(data, dict):
        if data.get("submission_mode") != "answer_url_bundle":
            raise InputError(path, "a JSON object must be an answer_url_bundle", field="submission_mode")
        name = system or data.get("model_name")
        if not name:
            raise InputError(path, "missing model name", field="model_name")
        runs = data.get("runs")
        if not isinstance(runs, list):
            raise InputError(path, "expected a list", field="runs")
        for i, run in enumerate(runs):
            if not isinstance(run, dict):
                raise InputError(path, "expected an object", field=f"runs[{i}]")
            urls = run.get("cited_urls")
            if not isinstance(urls, list):
                raise InputError(path, "expected a list of URLs", field=f"runs[{i}].cited_urls")
            for rank, url in enumerate(urls, start=1):
                rows.add(
                    f"runs[{i}].cited_urls[{rank - 1}].",
                    None,
                    {
                        "system": name,
                        "query_id": run.get("query_id"),
                        "url": url,
                        "rank": rank,
                        "query_text": run.get("query_text"),
                        "answer_text": run.get("answer_text"),
                        "language": run.get("language"),
                    },
                )
        return
    if not isinstance(data, list):
        raise InputError(path, "expected an answer_url_bundle object or a list of query records")
    for i, record in enumerate(data):
        if not isinstance(record, dict) or "aggregated_sources" not in record:
            raise InputError(path, "expected a query record with aggregated_sources", field=f"[{i}]")
        name = system or record.get("ai_model_name")
        if not name:
            raise InputError(path, "missing system name (pass --system)", field=f"[{i}].ai_model_name")
        answer = first_answer_text(record.get("runs"))
        for j, source in enumerate(record.get("aggregated_sources") or []):
            where = f"[{i}].aggregated_sources[{j}]."
            if not isinstance(source, dict):
                raise InputError(path, "expected an object", field=where.rstrip("."))
            rows.add(
                where,
                None,
                {
                    "system": name,
                    "query_id": record.get("query_id"),
                    "url": official_source_url(source),
                    "rank": j + 1,
                    "query_text": record.get("query_text"),
                    "answer_text": answer,
                    "agg_source_id": source.get("agg_source_id"),
                    "selected_topk": source.get("selected_topk"),
                },
            )


def first_answer_text(runs: Any) -> str | None:
    if isinstance(runs, list) and runs and isinstance(runs[0], dict):
        return runs[0].get("answer_text") or runs[0].get("response_text")
    return None


def official_source_url(source: dict[str, Any]) -> str:
    """The official ``get_source_url`` order: source_url, url, url_canonical, then url_examples[0]."""
    for key in ("source_url", "url", "url_canonical"):
        if source.get(key):
            return str(source[key])
    examples = source.get("url_examples")
    if isinstance(examples, list) and examples:
        return str(examples[0])
    return str(examples or "")


# -- official scraped JSON -> page records ---------------------------------------------------------
def official_date(value: Any) -> str | None:
    """An ISO date (YYYY-MM-DD) from an official date field, or None when it is absent or unparseable."""
    if not value or not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return None


def load_official_pages(path: str) -> pa.Table:
    """Page records (``crawler.schema.PAGE_SCHEMA``) from an official scraped or enriched JSON.

    Lets an audit judge the text the official pipeline scraped instead of crawling again. The text
    becomes ``text_full`` and ``text_main``; ``search_result_date`` and ``search_result_last_updated``
    become the published and modified dates; a source without text is an explicit ``error`` row.
    Sources citing the same canonical URL give one record (the first with text wins).
    """
    data = parse_json(path, decode_utf8(path, read_input_bytes(path)))
    if not isinstance(data, list):
        raise InputError(path, "expected a list of query records with aggregated_sources")
    records: dict[str, dict[str, Any]] = {}
    for i, record in enumerate(data):
        if not isinstance(record, dict) or not isinstance(record.get("aggregated_sources"), list):
            raise InputError(path, "expected a query record with aggregated_sources", field=f"[{i}]")
        for j, source in enumerate(record["aggregated_sources"]):
            where = f"[{i}].aggregated_sources[{j}]"
            if not isinstance(source, dict):
                raise InputError(path, "expected an object", field=where)
            url = check_url(path, official_source_url(source), line=None, field=f"{where}.url_canonical")
            try:
                key = url_key(canonicalize_url(url))
            except InvalidURL as exc:
                raise InputError(path, str(exc), field=f"{where}.url_canonical") from None
            examples = source.get("url_examples") if isinstance(source.get("url_examples"), list) else []
            text = source.get("text_content") or ""
            previous = records.get(key)
            if previous is not None:
                previous["original_urls"] = sorted({*previous["original_urls"], url, *map(str, examples)})
                if previous["status"] == "ok" or not text:
                    continue
            content = {
                "title": source.get("title") or None,
                "published_date": official_date(source.get("search_result_date")),
                "modified_date": official_date(source.get("search_result_last_updated")),
                "domain": registered_domain(url),
                "domain_category": source.get("domain_category") or domain_category(url),
                "text_full": text or None,
                "text_main": text or None,
                "bytes": len(text.encode("utf-8")),
                "content_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "content_type": "text/plain",
            }
            records[key] = page_record(
                url,
                status="ok" if text else "error",
                error=None if text else "no text in the official JSON",
                original_urls=[url, *map(str, examples), *(previous or {}).get("original_urls", [])],
                content=content,
            )
    return records_to_table(list(records.values()))


# -- official enriched JSON -> scores ------------------------------------------------------------------
def load_query_types(path: str | None) -> dict[str, str]:
    """query_id -> query_type from a queries CSV (empty when no file is given)."""
    if not path:
        return {}
    table = load_queries(path)
    return dict(zip(table["query_id"].to_pylist(), table["query_type"].to_pylist(), strict=True))


def load_enriched_scores(path: str, model_name: str, query_types: dict[str, str] | None = None) -> pa.Table:
    """Official enriched (or older flat scored) JSON -> a :data:`SOURCE_SCORES_SCHEMA` table.

    Follows the official reader: sources without a ``content_vector`` object are skipped, query types
    come from the record, then the query metadata, then ``"Unknown"``; scores go through
    :func:`official_score`.
    """
    data = parse_json(path, decode_utf8(path, read_input_bytes(path)))
    if not isinstance(data, list):
        raise InputError(path, "expected a top-level JSON list of query records")
    query_types = query_types or {}
    columns: dict[str, list[Any]] = {name: [] for name in SOURCE_SCORES_SCHEMA.names}
    first_record: dict[str, str] = {}

    def add(query: dict[str, Any], source: dict[str, Any], where: str, length_key: str) -> None:
        query_id = normalize_query_id(query.get("query_id"))
        if query_id is None:
            raise InputError(path, "missing query_id", field="query_id")
        vector = source["content_vector"]
        columns["model_name"].append(model_name)
        columns["query_id"].append(query_id)
        columns["query_type"].append(query.get("query_type") or query_types.get(query_id) or "Unknown")
        agg = source.get("agg_source_id")
        columns["agg_source_id"].append(None if agg is None else str(agg))
        columns["source_url"].append(official_source_url(source))
        columns["text_content_length"].append(
            checked_count(path, source.get(length_key), field=f"{where}.{length_key}")
        )
        columns["language"].append(query.get("language"))
        for key in DIMENSION_KEYS:
            columns[key].append(checked_score(path, vector.get(key), field=f"{where}.content_vector.{key}"))

    if data and isinstance(data[0], dict) and "aggregated_sources" in data[0]:
        for i, record in enumerate(data):
            if not isinstance(record, dict):
                continue
            query_id = normalize_query_id(record.get("query_id"))
            if query_id is not None and query_id in first_record:
                raise InputError(
                    path,
                    f"duplicate query record {query_id!r} (first at {first_record[query_id]})",
                    field=f"[{i}].query_id",
                )
            first_record.setdefault(query_id or "", f"[{i}]")
            for j, source in enumerate(record.get("aggregated_sources") or []):
                if isinstance(source, dict) and isinstance(source.get("content_vector"), dict):
                    add(record, source, f"[{i}].aggregated_sources[{j}]", "text_content_length")
    elif data and isinstance(data[0], dict) and "content_vector" in data[0]:
        for i, item in enumerate(data):
            if isinstance(item, dict) and isinstance(item.get("content_vector"), dict):
                length_key = "text_length" if item.get("text_length") else "text_content_length"
                add(item, item, f"[{i}]", length_key)
    elif data:
        raise InputError(
            path,
            "unsupported schema: expected query records with aggregated_sources, or flat records "
            "with content_vector",
            field="[0]",
        )
    return pa.Table.from_pydict(columns, schema=SOURCE_SCORES_SCHEMA)
