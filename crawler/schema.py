"""Arrow schema of the page record: one row per canonical URL (``url_key``) of a crawl.

Owned by the crawler; the judge reads it. Bump ``PAGE_SCHEMA_VERSION`` on any change.
"""

from __future__ import annotations

import pyarrow as pa

PAGE_SCHEMA_VERSION = 2

#: Terminal statuses of a URL. Every URL in a crawl ends with exactly one of these.
PAGE_STATUSES = (
    "ok",
    "http_error",
    "robots_disallowed",
    "blocked_address",
    "timeout",
    "too_large",
    "unsupported_type",
    "too_short",
    "error",
)
#: Statuses a later run may fetch again (``sourcebench crawl --retry-status``): every one but ok.
RETRYABLE_STATUSES = frozenset(PAGE_STATUSES) - {"ok"}

#: Layout and trust signals extracted from a page; consumed by the judge (stage 3 and the signals judge).
SIGNALS_TYPE = pa.struct(
    [
        pa.field("ad_label_count", pa.int32()),  # "Advertisement", "Sponsored", ad-slot class names
        pa.field("affiliate_cta_count", pa.int32()),  # "Buy now", "Check price", affiliate link patterns
        pa.field("link_density", pa.float32()),  # characters inside <a> / all visible characters
        pa.field("text_fragmentation", pa.float32()),  # share of visible text blocks shorter than 40 chars
        pa.field("popup_overlay_count", pa.int32()),  # modal/overlay/newsletter/cookie-wall markers
        pa.field("iframe_count", pa.int32()),
        pa.field("script_count", pa.int32()),
        pa.field("has_about_link", pa.bool_()),
        pa.field("has_contact_link", pa.bool_()),
        pa.field("has_address", pa.bool_()),  # a postal address or phone number in the text
        pa.field("has_privacy_link", pa.bool_()),
        pa.field("schema_org_types", pa.list_(pa.string())),  # @type values found in JSON-LD/microdata
        pa.field("schema_org_organization", pa.string()),  # publisher/organization name, if any
        pa.field("schema_org_person", pa.string()),  # author person name, if any
        pa.field("word_count", pa.int32()),  # words in text_main
        pa.field(
            "hidden_chars", pa.int32()
        ),  # characters of text a person cannot see, removed before all else
        pa.field(
            "hidden_kinds", pa.list_(pa.string())
        ),  # how it was hidden (crawler.visibility.HIDDEN_KINDS)
    ]
)

PAGE_SCHEMA = pa.schema(
    [
        pa.field("url_key", pa.string(), nullable=False),  # stable hash of the canonical URL
        pa.field("url", pa.string(), nullable=False),  # canonical URL
        pa.field("original_urls", pa.list_(pa.string())),  # every cited spelling that mapped to this key
        pa.field("final_url", pa.string()),
        pa.field("redirect_chain", pa.list_(pa.string())),
        pa.field("status", pa.string(), nullable=False),  # one of PAGE_STATUSES
        pa.field("error", pa.string()),  # why status != ok; on an ok page, a note (a failed render)
        pa.field("http_status", pa.int32()),
        pa.field("fetched_at", pa.timestamp("us", tz="UTC")),
        pa.field("content_type", pa.string()),
        pa.field("bytes", pa.int64()),
        pa.field("content_sha256", pa.string()),
        pa.field("rendered", pa.bool_()),  # True when the text came from a Playwright render
        pa.field("title", pa.string()),
        pa.field("authors", pa.list_(pa.string())),
        pa.field("published_date", pa.string()),  # ISO date YYYY-MM-DD or null
        pa.field("modified_date", pa.string()),  # ISO date YYYY-MM-DD or null
        pa.field("site_name", pa.string()),
        pa.field("language", pa.string()),  # ISO 639-1 code or null
        pa.field("domain", pa.string()),  # registered domain, e.g. nytimes.com
        pa.field("domain_category", pa.string()),  # gov, edu, org, com, news, ...
        pa.field("text_full", pa.string()),  # all visible text, boilerplate included
        pa.field("text_main", pa.string()),  # main content only
        pa.field("signals", SIGNALS_TYPE),
        pa.field("manipulation", pa.list_(pa.string())),  # crawler.manipulation.MANIPULATION_KINDS found
    ],
    metadata={"schema": "page", "version": str(PAGE_SCHEMA_VERSION)},
)
