"""Layout and trust signals of a page (SIGNALS_TYPE): the cues the judge's layout and meta stages use."""

from __future__ import annotations

import bisect
import itertools
import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from crawler.metadata import StructuredData, schema_organization, schema_person

_AD_LABEL = re.compile(
    r"^\s*(advertisement|advertisements|advertising|sponsored|sponsored content|sponsored by.*|paid content|"
    r"promoted|ad|ads|anzeige|werbung|publicité|publicidad|pubblicità|reklame|advertorial)\s*:?\s*$",
    re.I,
)
#: class/id tokens (split on whitespace, "_" and "-") that mark an ad slot.
_AD_TOKENS = frozenset(
    "ad ads adv advert advertisement advertising adslot adunit adsbygoogle dfp gpt "
    "sponsor sponsored taboola outbrain mgid revcontent".split()
)
_TOKEN_SPLIT = re.compile(r"[\s_-]+")
# The patterns below are lower-case and run on lower-cased text (faster than re.IGNORECASE).
_AD_SRC = re.compile(
    r"doubleclick\.net|googlesyndication|adservice|amazon-adsystem|taboola|outbrain|adnxs|criteo"
)
_CTA_TEXT = re.compile(
    r"\b(buy now|buy it now|shop now|check (?:the )?price|see (?:the )?price|view (?:the )?deal|"
    r"get (?:the |this )?deal|"
    r"see deal|add to (?:cart|basket)|order now|get it now|jetzt kaufen|zum angebot|acheter|comprar)\b",
)
_AFFILIATE_HREF = re.compile(
    r"amzn\.to/|amazon\.[a-z.]+/.*[?&]tag=|[?&](?:affid|aff_id|affiliate|aff|ref_id|clickref)=|/go/|/out/|/recommends/|"
    r"skimlinks|awin1\.com|shareasale|rstyle\.me|shopstyle|click\.linksynergy|anrdoezrs|tkqlhce|dpbolvw|jdoqocy|"
    r"prf\.hn|avantlink|go\.redirectingat|impact\.com|sjv\.io",
)
_CTA_OR_AFFILIATE = re.compile(f"{_CTA_TEXT.pattern}|{_AFFILIATE_HREF.pattern}")
_OVERLAY_CLASS = re.compile(
    r"modal|overlay|popup|pop-up|lightbox|newsletter-signup|subscribe-modal|interstitial|paywall|cookie-?(?:banner|wall|consent)"
    r"|gdpr|consent-banner|exit-intent",
)
_ABOUT = re.compile(
    r"\b(about(?:[\s-]us)?|who we are|our (?:team|mission|story)|über uns|impressum|a propos|"
    r"quiénes somos)\b",
)
_CONTACT = re.compile(r"\b(contact(?:[\s-]us)?|kontakt|contacto|contattaci|get in touch)\b")
_PRIVACY = re.compile(r"\b(privacy|datenschutz|confidentialit|privacidad|cookie policy)\b")
_PHONE = re.compile(r"(?:\+\d{1,3}[\s.-]?)?\(?\d{2,4}\)?[\s.-]\d{3,4}[\s.-]\d{3,4}\b")
_ADDRESS = re.compile(
    r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Way|Suite)\b"
    r"|\b[A-Z][a-zäöüß]+(?:straße|strasse|weg|platz|allee)\s+\d{1,4}\b|\bP\.?O\.? Box \d+",
)
_WORD = re.compile(r"\w+")


def _lines_matching(pattern: re.Pattern[str], lines: list[str]) -> int:
    """How many of ``lines`` contain a match of a lower-case ``pattern``: one scan over the joined,
    lower-cased lines (much faster than a case-insensitive search per line)."""
    if not lines:
        return 0
    joined = "\n".join(lines).lower()
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    return len({bisect.bisect_right(starts, m.start()) for m in pattern.finditer(joined)})


def page_signals(
    tree: LexborHTMLParser, data: StructuredData, text_full: str, text_main: str
) -> dict[str, Any]:
    """Counts and flags for SIGNALS_TYPE, from the parsed page and its extracted texts."""
    blocks = [line for line in text_full.splitlines() if line.strip()]
    attributes = [
        f"{node.attributes.get('class') or ''} {node.attributes.get('id') or ''}".replace("\n", " ")
        for node in tree.css("[class], [id]:not([class])")
    ]
    iframes = tree.css("iframe")
    sources = [node.attributes.get("src") or "" for node in iframes]
    sources += [node.attributes.get("src") or "" for node in tree.css("script[src]")]
    links = [(link.text(deep=True).strip(), link.attributes.get("href") or "") for link in tree.css("a")]
    link_lines = [f"{text} {href}".replace("\n", " ") for text, href in links]
    buttons = [node.text(deep=True).replace("\n", " ") for node in tree.css("button")]
    visible = sum(len(line) for line in blocks)
    return {
        "ad_label_count": sum(1 for line in blocks if len(line) < 40 and _AD_LABEL.match(line))
        + sum(1 for attr in attributes if not _AD_TOKENS.isdisjoint(_TOKEN_SPLIT.split(attr.lower())))
        + _lines_matching(_AD_SRC, sources),
        "affiliate_cta_count": _lines_matching(_CTA_OR_AFFILIATE, link_lines)
        + _lines_matching(_CTA_TEXT, buttons),
        "link_density": round(min(1.0, sum(len(t) for t, _ in links) / visible), 4) if visible else 0.0,
        "text_fragmentation": round(sum(1 for b in blocks if len(b.strip()) < 40) / len(blocks), 4)
        if blocks
        else 0.0,
        "popup_overlay_count": _lines_matching(_OVERLAY_CLASS, attributes) + len(tree.css("dialog")),
        "iframe_count": len(iframes),
        "script_count": len(tree.css("script")),
        "has_about_link": _lines_matching(_ABOUT, link_lines) > 0,
        "has_contact_link": _lines_matching(_CONTACT, link_lines) > 0
        or any(h.startswith("mailto:") for _, h in links),
        "has_address": bool(_PHONE.search(text_full) or _ADDRESS.search(text_full)),
        "has_privacy_link": _lines_matching(_PRIVACY, link_lines) > 0,
        "schema_org_types": data.types,
        "schema_org_organization": schema_organization(data),
        "schema_org_person": schema_person(data),
        "word_count": len(_WORD.findall(text_main)),
    }


def text_signals(text: str) -> dict[str, Any]:
    """Signals of a page without markup (PDF, plain text): only the text-based ones are known."""
    blocks = [line for line in text.splitlines() if line.strip()]
    return {
        "ad_label_count": sum(1 for line in blocks if _AD_LABEL.match(line)),
        "affiliate_cta_count": len(_CTA_TEXT.findall(text.lower())),
        "link_density": 0.0,
        "text_fragmentation": round(sum(1 for b in blocks if len(b.strip()) < 40) / len(blocks), 4)
        if blocks
        else 0.0,
        "popup_overlay_count": 0,
        "iframe_count": 0,
        "script_count": 0,
        "has_about_link": False,
        "has_contact_link": False,
        "has_address": bool(_PHONE.search(text) or _ADDRESS.search(text)),
        "has_privacy_link": False,
        "schema_org_types": [],
        "schema_org_organization": None,
        "schema_org_person": None,
        "word_count": len(_WORD.findall(text)),
    }
