from crawler.decoding import classify, decode_body


def test_utf8_declared_as_latin1_is_read_as_utf8():
    body = "<p>Café Zürich</p>".encode()
    assert "Café Zürich" in decode_body(body, "text/html; charset=iso-8859-1")


def test_real_latin1_and_meta_charset():
    assert "Café" in decode_body("<p>Café</p>".encode("latin-1"), "text/html; charset=ISO-8859-1")
    body = '<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251")
    assert "Привет" in decode_body(body, "text/html")
    assert decode_body(b"\xef\xbb\xbfhello", None) == "hello"


def test_classify_sniffs_bodies():
    assert classify("text/html", b"<html><body>x</body></html>") == "html"
    assert classify("text/html", b"\x00\x01\x02" * 100) == "unsupported"
    assert classify("application/octet-stream", b"%PDF-1.4 ...") == "pdf"
    assert classify(None, b"<!doctype html><html>") == "html"
    assert classify("text/plain", b"just words") == "text"
    assert classify("image/png", b"\x89PNG....") == "unsupported"
