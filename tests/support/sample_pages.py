"""Page records (PAGE_SCHEMA) built from the real pages under ../shared/data, for tests and benches.

Runs the crawler's own extraction (``crawler.extract.extract_page``) on the stored HTML, as a crawl
would, without fetching anything. Not used by the judge itself.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pyarrow as pa

from crawler.extract import extract_page
from crawler.schema import PAGE_SCHEMA
from crawler.urls import canonicalize_url, url_key

#: Page sets with ``ground_truth.json`` mapping a file id to its original URL, in the order used.
_SETS = ("htmldate", "trafilatura", "aeb")


def _html_files(shared_data: Path):
    for name in _SETS:
        folder = shared_data / "pages" / name
        truth = json.loads((folder / "ground_truth.json").read_text())
        for file_id in sorted(truth):
            candidates = [folder / "html" / file_id, folder / "html" / f"{file_id}.html.gz"]
            path = next((p for p in candidates if p.is_file()), None)
            if path is not None and truth[file_id].get("url"):
                yield truth[file_id]["url"], path


def sample_page_records(shared_data: str | Path, limit: int = 120) -> pa.Table:
    """Up to ``limit`` page records (status ok or what extraction decided) from the shared page sets."""
    rows, seen = [], set()
    fetched = dt.datetime(2026, 1, 20, tzinfo=dt.UTC)
    for url, path in _html_files(Path(shared_data)):
        if len(rows) >= limit:
            break
        canonical = canonicalize_url(url)
        key = url_key(canonical)
        if key in seen:
            continue
        seen.add(key)
        raw = path.read_bytes()
        body = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        record = extract_page(canonical, body, "text/html")
        rows.append({
            **record, "url_key": key, "url": canonical, "original_urls": [url], "final_url": canonical,
            "redirect_chain": [], "http_status": 200, "fetched_at": fetched, "rendered": False,
        })  # fmt: skip
    return pa.Table.from_pylist(rows, schema=PAGE_SCHEMA)
