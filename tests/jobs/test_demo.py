"""The bundled demo corpus: reproducible from ../shared/data, and shaped as the demo needs it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from jobs.demo import build_demo
from jobs.inputs import load_citations, load_queries
from jobs.schemas import QUERY_TYPES

DEMO = Path(__file__).resolve().parents[2] / "jobs" / "demo"


def archived() -> dict[str, tuple[str, str | None]]:
    """URL -> (HTTP status, Content-Type) of every response record."""
    out = {}
    with open(DEMO / "demo.warc.gz", "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type == "response":
                url = record.rec_headers.get_header("WARC-Target-URI")
                out[url] = (
                    record.http_headers.get_statuscode(),
                    record.http_headers.get_header("Content-Type"),
                )
    return out


def test_rebuild_is_byte_identical(shared_data, tmp_path):
    build_demo.build(shared_data, tmp_path)
    for name in (
        "demo.warc.gz",
        "pages.csv",
        "queries.csv",
        "serp.csv",
        *(f"citations/{s}.json" for s in build_demo.SYSTEMS),
    ):
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), name


def test_pages_are_archived_under_their_original_urls(shared_data):
    records = archived()
    for page in build_demo.PAGES:
        url = build_demo.page_url(shared_data, page)
        status, content_type = records[url]
        assert status == "200" and content_type.startswith("text/html; charset="), url
    assert records[build_demo.NOT_FOUND_URL][0] == "404"
    assert records[build_demo.REDIRECT_URL][0] == "301"
    assert (DEMO / "demo.warc.gz").stat().st_size < 5 * 1024 * 1024
    with open(DEMO / "pages.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == len(records)


def test_queries_and_bundles_cover_the_demo_design():
    queries = load_queries(str(DEMO / "queries.csv"))
    assert queries.num_rows >= 12 and set(queries["query_type"].to_pylist()) == set(QUERY_TYPES)
    paths = sorted(str(p) for p in (DEMO / "citations").glob("*.json"))
    citations = load_citations(paths)
    per_system = {}
    for row in citations.select(["system", "query_id"]).to_pylist():
        per_system.setdefault(row["system"], set()).add(row["query_id"])
    assert len(per_system) >= 3 and all(len(q) >= 12 for q in per_system.values())
    assert all(json.loads(Path(p).read_text())["submission_mode"] == "answer_url_bundle" for p in paths)
    cited = set(citations["url"].to_pylist())
    missing = cited - set(archived())
    assert missing == set(build_demo.MISSING_URLS.values())  # only the deliberate dead links
