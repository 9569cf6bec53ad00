"""Page records: building one row of PAGE_SCHEMA and turning a batch of them into an Arrow table."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from crawler.schema import PAGE_SCHEMA, PAGE_STATUSES
from crawler.urls import canonicalize_url, url_key

#: Content fields (filled by ``extract_page``) and their empty values.
CONTENT_FIELDS: dict[str, Any] = {
    "content_type": None,
    "bytes": None,
    "content_sha256": None,
    "title": None,
    "authors": [],
    "published_date": None,
    "modified_date": None,
    "site_name": None,
    "language": None,
    "domain": None,
    "domain_category": None,
    "text_full": None,
    "text_main": None,
    "signals": None,
    "manipulation": [],
}


def page_record(
    url: str,
    *,
    status: str,
    key: str | None = None,
    error: str | None = None,
    original_urls: Iterable[str] = (),
    final_url: str | None = None,
    redirect_chain: Iterable[str] = (),
    http_status: int | None = None,
    fetched_at: datetime | None = None,
    rendered: bool = False,
    content: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One page record (a PAGE_SCHEMA row).

    Args:
        url: Any spelling of the page's URL; it is stored canonicalised, with its url_key.
        key: The url_key when the caller has it (then ``url`` is stored as given: a shard entry's
            canonical URL, or the raw text of an invalid URL).
        status: One of PAGE_STATUSES; ``content['status']`` (from extraction) overrides an ``ok``.
        content: The output of ``extract_page`` (text, metadata, signals), if the body was extracted.
    """
    canonical = canonicalize_url(url) if key is None else url
    record: dict[str, Any] = {
        "url_key": key or url_key(canonical),
        "url": canonical,
        "original_urls": sorted(set(original_urls)) or [url],
        "final_url": final_url,
        "redirect_chain": list(redirect_chain),
        "status": status,
        "error": error,
        "http_status": http_status,
        "fetched_at": fetched_at or datetime.now(UTC),
        "rendered": rendered,
        **{
            name: (list(value) if isinstance(value, list) else value)
            for name, value in CONTENT_FIELDS.items()
        },
    }
    if content:
        for name in CONTENT_FIELDS:
            if name in content:
                record[name] = content[name]
        if status == "ok" and content.get("status", "ok") != "ok":
            record["status"], record["error"] = content["status"], content.get("error")
    if record["status"] not in PAGE_STATUSES:
        raise ValueError(f"unknown page status {record['status']!r}")
    return record


def records_to_table(records: list[dict[str, Any]]) -> pa.Table:
    """An Arrow table with exactly PAGE_SCHEMA (column order, types, metadata)."""
    columns = {field.name: [record.get(field.name) for record in records] for field in PAGE_SCHEMA}
    return pa.Table.from_pydict(columns, schema=PAGE_SCHEMA)


def json_ready(record: dict[str, Any]) -> dict[str, Any]:
    """A record with the timestamp as an ISO string (for JSON lines output)."""
    out = dict(record)
    if isinstance(out.get("fetched_at"), datetime):
        out["fetched_at"] = out["fetched_at"].isoformat()
    return out
