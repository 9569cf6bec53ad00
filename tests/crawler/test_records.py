import pytest

from crawler.records import page_record, records_to_table
from crawler.schema import PAGE_SCHEMA
from crawler.urls import url_key


def test_records_make_a_page_schema_table():
    ok = page_record(
        "HTTP://Example.com/a#x", status="ok", http_status=200, content={"title": "T", "authors": ["A"]}
    )
    failed = page_record("https://example.com/b", status="timeout", error="timed out")
    table = records_to_table([ok, failed])
    assert table.schema.equals(PAGE_SCHEMA, check_metadata=True)
    assert table.column("url").to_pylist() == ["http://example.com/a", "https://example.com/b"]
    assert table.column("url_key").to_pylist()[0] == url_key("http://example.com/a")
    assert ok["original_urls"] == ["HTTP://Example.com/a#x"]


def test_extraction_status_overrides_ok_and_unknown_status_fails():
    record = page_record("https://e.com/", status="ok", content={"status": "too_short", "error": "short"})
    assert record["status"] == "too_short"
    with pytest.raises(ValueError):
        page_record("https://e.com/", status="fine")
