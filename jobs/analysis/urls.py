"""URL identity for the analyses: the crawler's canonical URL (page level) and registered domain (site level).

Thin adapters over ``crawler.urls.canonicalize_url`` and ``crawler.domains.registered_domain`` so the
overlap and the calibration join match pages exactly as the crawler deduplicates them, while tolerating
the odd value in user files (an invalid URL is compared as written instead of aborting the analysis).
"""

from __future__ import annotations

from functools import lru_cache

from crawler.domains import registered_domain as crawler_registered_domain
from crawler.urls import InvalidURL, canonicalize_url


@lru_cache(maxsize=200_000)
def canonical_url(url: str) -> str:
    """The crawler's canonical spelling; an invalid URL is returned stripped, as written."""
    try:
        return canonicalize_url(url)
    except InvalidURL:
        return (url or "").strip()


def registered_domain(url: str) -> str:
    """The registrable domain (``news.bbc.co.uk`` -> ``bbc.co.uk``); empty when there is no host."""
    return crawler_registered_domain(url) or ""
