"""Registered domain and domain category of a URL (offline: tldextract's bundled suffix list)."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from crawler.netguard import is_ip_literal

if TYPE_CHECKING:
    import tldextract


@cache
def _extractor() -> tldextract.TLDExtract:
    """The suffix list, loaded on first use (tldextract and requests cost ~0.1 s to import).

    Never fetched over the network: the snapshot shipped with tldextract.
    """
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


#: Second-level labels of country-code suffixes that mean the same as a generic TLD (gov.uk, ac.jp, ...).
_CC_SECOND_LEVEL = {
    "gov": "gov", "gob": "gov", "gouv": "gov", "govt": "gov", "go": "gov", "admin": "gov",
    "edu": "edu", "ac": "edu", "uni": "edu", "sch": "edu",
    "mil": "mil",
    "org": "org", "or": "org", "ngo": "org",
    "com": "com", "co": "com", "ltd": "com", "plc": "com", "biz": "com",
    "net": "net", "ne": "net",
}  # fmt: skip
_GENERIC = {"gov": "gov", "edu": "edu", "mil": "mil", "int": "int", "org": "org", "com": "com", "net": "net"}


@lru_cache(maxsize=65536)
def registered_domain(url_or_host: str) -> str | None:
    """``https://www.bbc.co.uk/news`` -> ``bbc.co.uk``; an IP address is its own domain."""
    host = urlsplit(url_or_host).hostname if "//" in url_or_host else url_or_host
    host = (host or "").lower().rstrip(".")
    if not host:
        return None
    if is_ip_literal(host):
        return host
    parts = _extractor()(host)
    if parts.domain and parts.suffix:
        return f"{parts.domain}.{parts.suffix}"
    return host


@lru_cache(maxsize=65536)
def domain_category(url_or_host: str) -> str:
    """gov, edu, mil, int, org, com, net, country (a bare ccTLD such as .de) or other (.io, .info, IPs...)."""
    host = urlsplit(url_or_host).hostname if "//" in url_or_host else url_or_host
    host = (host or "").lower().rstrip(".")
    if not host or is_ip_literal(host):
        return "other"
    suffix = _extractor()(host).suffix
    labels = suffix.split(".") if suffix else []
    if not labels:
        return "other"
    if len(labels) == 1:
        if labels[0] in _GENERIC:
            return _GENERIC[labels[0]]
        return "country" if len(labels[0]) == 2 else "other"
    return _CC_SECOND_LEVEL.get(labels[0], "country" if len(labels[-1]) == 2 else "other")
