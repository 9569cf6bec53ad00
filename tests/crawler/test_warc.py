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


def test_each_record_is_a_gzip_member_at_the_configured_level(shared_data, tmp_path):
    """Any level writes the same records; each is its own gzip member, so a record reads from its offset."""
    import gzip
    import zlib

    pages = sorted((shared_data / "pages" / "aeb" / "html").glob("*.gz"))[:3]
    bodies = [gzip.decompress(page.read_bytes()) for page in pages]
    sizes = {}
    for level in (1, 9):
        writer = WarcPartWriter(compression_level=level)
        for i, body in enumerate(bodies):
            writer.write_response(f"https://e.com/{i}", 200, [("Content-Type", "text/html")], body)
        data = writer.getvalue()
        writer.close()
        sizes[level] = len(data)
        members, rest = 0, data
        while rest:  # one gzip member per record, back to back
            member = zlib.decompressobj(zlib.MAX_WBITS + 16)
            member.decompress(rest)
            rest, members = member.unused_data, members + 1
        assert members == len(bodies)
        path = tmp_path / f"level{level}.warc.gz"
        path.write_bytes(data)
        index = WarcIndex([str(path)])
        assert [index.get(f"https://e.com/{i}", limit=10_000_000).body for i in range(3)] == bodies
    assert sizes[1] > sizes[9]  # the level is the one asked for
