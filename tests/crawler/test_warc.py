"""WARC writing and reading, on our own files and the real sample archives (incl. ARC, chunked, CC-style)."""

import pytest

from crawler.warc import WarcIndex, WarcPartWriter, iter_responses, write_warc

SAMPLES = {
    "warcio/example.warc.gz": 1,
    "warcio/example.warc": 1,
    "warcio/example.arc.gz": 1,
    "warcio/example-iana.org-chunked.warc": 1,
    "warcio/example-trunc.warc": 1,
    "warcio/example-resource.warc.gz": 1,
    "resiliparse/warcfile.warc.gz": 16,
    "resiliparse/clueweb-quirk.warc.gz": 29,
    "resiliparse/clipped.warc.gz": 1,
}


@pytest.mark.parametrize(("name", "count"), SAMPLES.items())
def test_sample_archives_are_readable_and_indexable(shared_data, name, count):
    path = str(shared_data / "warc" / name)
    responses = list(iter_responses(path, limit=2_000_000))
    assert len(responses) == count
    index = WarcIndex([path])
    first = index.get(responses[0].url, limit=2_000_000)
    assert first is not None and first.body == responses[0].body and first.status == responses[0].status


def test_chunked_record_is_decoded(shared_data):
    (response,) = iter_responses(str(shared_data / "warc/warcio/example-iana.org-chunked.warc"))
    assert b"<html" in response.body.lower() and all(
        k.lower() != "transfer-encoding" for k, _ in response.headers
    )


def test_roundtrip_and_size_limit(tmp_path):
    path = str(tmp_path / "t.warc.gz")
    body = b"<html><body>" + b"x" * 5000 + b"</body></html>"
    write_warc(path, [("https://Example.com/a?utm_source=z", 200, [("Content-Type", "text/html")], body),
                      ("https://example.com/r", 301, [("Location", "/a")], b"")])  # fmt: skip
    index = WarcIndex([path])
    assert len(index) == 2 and "https://example.com/a" in index  # matched on the canonical URL
    assert index.get("https://example.com/a").body == body
    assert index.get("https://example.com/a", limit=100).truncated
    assert index.get("https://example.com/r").status == 301
    assert index.get("https://example.com/missing") is None


def test_part_writer_counts_records():
    writer = WarcPartWriter()
    writer.write_response("https://e.com/", 200, [("Content-Type", "text/html")], b"<p>x</p>")
    writer.write_response("https://e.com/", 200, [], b"<p>rendered</p>", record_type="conversion")
    assert writer.records == 2 and writer.getvalue()[:2] == b"\x1f\x8b"
    writer.close()
