"""Registered domain and domain category of a URL (offline: tldextract's bundled suffix list)."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

import tldextract

from crawler.netguard import is_ip_literal

# Never fetch the public suffix list over the network: use the snapshot shipped with tldextract.
_EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

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
    parts = _EXTRACT(host)
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
    suffix = _EXTRACT(host).suffix
    labels = suffix.split(".") if suffix else []
    if not labels:
        return "other"
    if len(labels) == 1:
        if labels[0] in _GENERIC:
            return _GENERIC[labels[0]]
        return "country" if len(labels[0]) == 2 else "other"
    return _CC_SECOND_LEVEL.get(labels[0], "country" if len(labels[-1]) == 2 else "other")
