"""URL canonicalisation and the stable ``url_key`` that identifies a page across systems and queries.

Two spellings of one page (``HTTP://Example.com:80/a?utm_source=x#top`` and ``http://example.com/a``)
map to one canonical URL and therefore to one fetch and one page record.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

#: Query parameters that only track the click, never select content (exact names).
TRACKING_PARAMS = frozenset(
    {
        "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "ttclid", "li_fat_id",
        "mc_cid", "mc_eid", "igshid", "_hsenc", "_hsmi", "mkt_tok", "oly_enc_id", "oly_anon_id", "vero_id",
        "rb_clickid", "s_cid", "srsltid", "_ga", "_gl", "ref_src", "ref_url", "cmpid", "wt_mc", "spm",
    }
)  # fmt: skip
#: Query parameter prefixes that only track the click (``utm_source``, ``utm_medium``, ...).
TRACKING_PREFIXES = ("utm_", "pk_", "hsa_", "mtm_", "ga_")
DEFAULT_PORTS = {"http": 80, "https": 443}

# RFC 3986 characters that stay literal in a path / query; everything else is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_QUERY_SAFE = "/?:@!$'()*+,;-._~"


class InvalidURL(ValueError):
    """A string that is not an absolute http(s) URL."""


def _is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(TRACKING_PREFIXES)


# Percent-encoded delimiters keep their encoding (decoding them would change the URL's meaning).
_ENCODED_DELIMITER = re.compile(r"(%(?:2F|3F|26|3D|23|25|2B))", re.IGNORECASE)


def _normalise_component(text: str, safe: str) -> str:
    """Decode then re-encode so that ``%7E``/``~`` and ``%c3%a9``/``é`` are spelled one way."""
    pieces = _ENCODED_DELIMITER.split(text)
    return "".join(
        piece.upper() if index % 2 else quote(unquote(piece), safe=safe) for index, piece in enumerate(pieces)
    )


def canonicalize_url(url: str) -> str:
    """The canonical spelling of an http(s) URL.

    Lower-cases scheme and host (IDNA-encoded), drops ``user:password@`` credentials (never stored,
    never sent), default ports, the fragment, tracking parameters and empty query; normalises
    percent-encoding; sorts the remaining query parameters (stable order, duplicates kept); an
    empty path becomes ``/``.

    Raises:
        InvalidURL: the string is not an absolute http(s) URL with a host.
    """
    text = (url or "").strip()
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise InvalidURL(f"not a URL: {url!r} ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise InvalidURL(f"not an http(s) URL: {url!r}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise InvalidURL(f"URL has no host: {url!r}")
    try:
        host = host.encode("idna").decode("ascii").lower() if not host.isascii() else host.lower()
        port = parts.port
    except (UnicodeError, ValueError) as exc:
        raise InvalidURL(f"bad host or port in {url!r} ({exc})") from exc
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _normalise_component(parts.path or "/", _PATH_SAFE)
    params = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _is_tracking(k)]
    query = urlencode(sorted(params), quote_via=quote, safe=_QUERY_SAFE.replace("+", "")) if params else ""
    return urlunsplit((scheme, netloc, path, query, ""))


def strip_credentials(url: str) -> str:
    """``url`` without the ``user:password@`` of its authority (any scheme); other text unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def url_key(url: str) -> str:
    """A stable 20-hex-digit key of the canonical URL (the page record's primary key)."""
    return hashlib.sha1(canonicalize_url(url).encode("utf-8")).hexdigest()[:20]
