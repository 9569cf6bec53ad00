"""URL identity for the analyses: canonical URL (page level) and registered domain (site level).

``canonical_url`` is a small local normaliser used until the crawler's canonicaliser lands; the
overlap must use the same identity the crawler uses, so this module is the one place to switch.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import tldextract

_TRACKING_PREFIXES = ("utm_", "mc_", "pk_")
_TRACKING_KEYS = {"gclid", "fbclid", "msclkid", "yclid", "igshid", "ref_src", "spm"}
_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_url(url: str) -> str:
    """Scheme/host lower-cased, default port, fragment and tracking parameters dropped, ``www.`` kept."""
    text = (url or "").strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    port = parts.port
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    query = urlencode(
        sorted(
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not k.lower().startswith(_TRACKING_PREFIXES) and k.lower() not in _TRACKING_KEYS
        )
    )
    path = parts.path or "/"
    return urlunsplit((scheme, netloc, path, query, ""))


@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    # Offline: the bundled public-suffix snapshot, no fetch, no cache directory.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@lru_cache(maxsize=200_000)
def registered_domain(url: str) -> str:
    """The registrable domain (``news.bbc.co.uk`` -> ``bbc.co.uk``); the host itself for IPs/unknown."""
    parts = _extractor()(url)
    return (parts.top_domain_under_public_suffix or parts.fqdn or parts.domain or "").lower()
