"""Content-type classification and robust HTML decoding (servers often declare the wrong charset)."""

from __future__ import annotations

import codecs
import re
from typing import Literal

Kind = Literal["html", "pdf", "text", "unsupported"]

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([a-zA-Z0-9_.:-]+)", re.IGNORECASE)
_HTML_START = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|meta|title|div|p)\b", re.I | re.S
)

#: Control characters that text does not hold (tab, line feed, vertical tab, form feed and carriage return
#: are text).
_CONTROL_BYTES = bytes([*range(9), *range(14, 32)])

HTML_TYPES = {"text/html", "application/xhtml+xml", "application/xml+html"}
TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown"}
PDF_TYPES = {"application/pdf", "application/x-pdf"}


def mime_type(content_type: str | None) -> str:
    """``text/html; charset=utf-8`` -> ``text/html``."""
    return (content_type or "").split(";")[0].strip().lower()


def looks_binary(body: bytes) -> bool:
    """NUL bytes or many control characters in the first KiB: not text whatever the header says."""
    head = body[:1024]
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return controls / len(head) > 0.1


def classify(content_type: str | None, body: bytes, url: str = "") -> Kind:
    """Decide how to extract a body from its declared type, sniffing when the header is missing or generic."""
    mime = mime_type(content_type)
    if mime in PDF_TYPES or body.startswith(b"%PDF-"):
        return "pdf"
    if looks_binary(body):
        return "unsupported"
    if mime in HTML_TYPES:
        return "html"
    if mime in TEXT_TYPES:
        return "html" if _HTML_START.match(body[:2048]) else "text"
    if mime in {"", "application/octet-stream", "binary/octet-stream"} or mime.endswith("xml"):
        if _HTML_START.match(body[:2048]):
            return "html"
        if not mime and url.lower().endswith((".txt", ".md")):
            return "text"
    return "unsupported"


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().lower()).name
    except LookupError:
        return None


def decode_body(body: bytes, content_type: str | None = None) -> str:
    """Decode a text body.

    Order: a BOM; strict UTF-8 when the bytes are valid UTF-8 with non-ASCII characters (valid
    UTF-8 is almost never accidental, and it is the commonest mislabelled charset); the header
    charset; a ``<meta charset>``; finally cp1252 (what browsers assume for "latin-1").
    """
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return body.decode(name, errors="replace")
    if not body.isascii():
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            pass
    header = _HEADER_CHARSET.search(content_type or "")
    meta = _META_CHARSET.search(body[:4096])
    for candidate in (
        header.group(1) if header else None,
        meta.group(1).decode("ascii", "ignore") if meta else None,
    ):
        codec = _codec(candidate)
        if codec and codec not in {"utf-8", "utf-16", "utf-32"}:
            if codec in {"latin-1", "iso8859-1", "ascii"}:
                codec = "cp1252"
            return body.decode(codec, errors="replace")
    return body.decode("cp1252", errors="replace")
