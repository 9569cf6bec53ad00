"""``sourcebench extract --input pages.jsonl``: page records for local HTML files, one JSON per line.

Each input line is ``{"url": ..., "path": ...}`` (``.html`` or ``.html.gz``; a relative path is
relative to the input file's folder), optionally with ``"content_type"``. Output fields are those
of PAGE_SCHEMA; ``http_status`` is null (nothing was fetched) and ``fetched_at`` is the file's
modification time. For debugging extraction and for bringing your own HTML.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler.base import InputError
from crawler.extract import extract_page
from crawler.records import json_ready, page_record
from crawler.urls import InvalidURL, canonicalize_url
from jobs.cli import nonnegative_int, run_module


def read_body(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" or data[:2] == b"\x1f\x8b" else data


def extract_line(source: str, number: int, line: str, base: Path, min_text_chars: int) -> dict[str, Any]:
    """The page record of one input line (raises InputError naming the line and field)."""
    try:
        item = json.loads(line)
    except ValueError as exc:
        raise InputError(source, f"not valid JSON ({exc.msg})", line=number) from exc
    if not isinstance(item, dict):
        raise InputError(source, "each line must be a JSON object", line=number)
    for field in ("url", "path"):
        if not isinstance(item.get(field), str) or not item[field].strip():
            raise InputError(source, "missing or empty (a string is required)", line=number, field=field)
    try:
        canonicalize_url(item["url"])
    except InvalidURL as exc:
        raise InputError(source, str(exc), line=number, field="url") from exc
    path = Path(item["path"]).expanduser()
    path = path if path.is_absolute() else base / path
    try:
        body = read_body(path)
    except (OSError, gzip.BadGzipFile, EOFError) as exc:
        raise InputError(source, f"cannot read {path}: {exc}", line=number, field="path") from exc
    content_type = item.get("content_type") or "text/html"
    content = extract_page(item["url"], body, content_type, min_text_chars=min_text_chars)
    fetched_at = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return page_record(
        item["url"], status="ok", final_url=item["url"], fetched_at=fetched_at, content=content
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", required=True, help='JSON lines: {"url": ..., "path": ...} per page')
    parser.add_argument(
        "--min-text-chars", type=nonnegative_int, default=25, help="shorter visible text is too_short"
    )


def run(args: argparse.Namespace) -> int:
    source = Path(args.input)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {InputError(str(source), f'cannot read: {exc}')}", file=sys.stderr)
        return 2
    try:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                record = extract_line(str(source), number, line, source.parent, args.min_text_chars)
                print(json.dumps(json_ready(record), ensure_ascii=False), flush=True)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    run_module("extract")
