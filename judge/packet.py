"""The judge's view of one request: a page record, a query and a stage."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PagePacket:
    """What every stage may see of a page (built from one PAGE_SCHEMA row)."""

    url_key: str
    url: str
    text: str
    """Page text given to the judge (``text_full`` by default: the paper judges all visible text)."""
    content_hash: str
    """sha256 of the page content (the crawler's ``content_sha256``, else of ``text``)."""
    domain: str = ""
    title: str | None = None
    authors: tuple[str, ...] = ()
    published_date: str | None = None
    modified_date: str | None = None
    site_name: str | None = None
    language: str | None = None
    text_main: str = ""
    signals: dict[str, Any] = field(default_factory=dict)
    manipulation: tuple[str, ...] = ()
    """What the crawler's manipulation checks flagged (``crawler.manipulation.MANIPULATION_KINDS``)."""

    @classmethod
    def from_record(cls, row: dict[str, Any], text_field: str = "text_full") -> PagePacket:
        """Build from a page record (a PAGE_SCHEMA row as a dict)."""
        text = row.get(text_field) or row.get("text_main") or row.get("text_full") or ""
        content_hash = row.get("content_sha256") or hashlib.sha256(text.encode("utf-8")).hexdigest()
        return cls(
            url_key=row["url_key"],
            url=row.get("final_url") or row["url"],
            text=text,
            content_hash=content_hash,
            domain=row.get("domain") or "",
            title=row.get("title"),
            authors=tuple(row.get("authors") or ()),
            published_date=row.get("published_date"),
            modified_date=row.get("modified_date"),
            site_name=row.get("site_name"),
            language=row.get("language"),
            text_main=row.get("text_main") or "",
            signals=dict(row.get("signals") or {}),
            manipulation=tuple(row.get("manipulation") or ()),
        )


@dataclass(frozen=True)
class StageRequest:
    """One judge request: a page, a query and one of the three stages."""

    judgment_key: str
    page: PagePacket
    query_id: str
    query_text: str
    stage: str
