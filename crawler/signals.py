"""Layout and trust signals of a page (SIGNALS_TYPE): the cues the judge's layout and meta stages use."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.metadata import StructuredData, schema_organization, schema_person
from crawler.phrases import Phrases, Start
from crawler.visibility import distinct_nodes

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
# The phrases below are lower-case and looked for in lower-cased text (``crawler.phrases``: much faster
# than a regex search, with or without re.IGNORECASE). A leading \b is checked by ``_word_start``, and
# a class/id token's start by ``_token_start``.
#: One of those tokens inside a lower-cased class/id line.
_AD_TOKEN = Phrases(sorted(_AD_TOKENS, key=lambda t: (-len(t), t)), suffix=r"(?![^\s_-])")
_AD_SRC = Phrases(
    (
        r"doubleclick\.net",
        "googlesyndication",
        "adservice",
        "amazon-adsystem",
        "taboola",
        "outbrain",
        "adnxs",
        "criteo",
    )
)
_CTA_TEXT = Phrases(
    (
        "buy now",
        "buy it now",
        "shop now",
        "check (?:the )?price",
        "see (?:the )?price",
        "view (?:the )?deal",
        "get (?:the |this )?deal",
        "see deal",
        "add to (?:cart|basket)",
        "order now",
        "get it now",
        "jetzt kaufen",
        "zum angebot",
        "acheter",
        "comprar",
    ),
    suffix=r"\b",
)
_AFFILIATE_PARAMS = ("affid", "aff_id", "affiliate", "aff", "ref_id", "clickref")
_AFFILIATE_HREF = Phrases(
    (
        r"amzn\.to/",
        r"amazon\.[a-z.]+/.*[?&]tag=",
        *(rf"\{sep}{name}=" for sep in "?&" for name in _AFFILIATE_PARAMS),
        "/go/",
        "/out/",
        "/recommends/",
        "skimlinks",
        r"awin1\.com",
        "shareasale",
        r"rstyle\.me",
        "shopstyle",
        r"click\.linksynergy",
        "anrdoezrs",
        "tkqlhce",
        "dpbolvw",
        "jdoqocy",
        r"prf\.hn",
        "avantlink",
        r"go\.redirectingat",
        r"impact\.com",
        r"sjv\.io",
    )
)
#: Class/id words of an overlay.
_OVERLAY_WORDS = Phrases((
    "modal", "overlay", "popup", "pop-up", "lightbox", "newsletter-signup", "subscribe-modal",
    "interstitial", "paywall", "cookiebanner", "cookie-banner", "cookiewall", "cookie-wall",
    "cookieconsent", "cookie-consent", "gdpr", "consent-banner", "exit-intent",
))  # fmt: skip
_ABOUT = Phrases(
    (
        r"about(?:[\s-]us)?",
        "who we are",
        "our (?:team|mission|story)",
        "über uns",
        "impressum",
        "a propos",
        "quiénes somos",
    ),
    suffix=r"\b",
)
_CONTACT = Phrases(
    (r"contact(?:[\s-]us)?", "kontakt", "contacto", "contattaci", "get in touch"), suffix=r"\b"
)
_PRIVACY = Phrases(("privacy", "datenschutz", "confidentialit", "privacidad", "cookie policy"), suffix=r"\b")
#: A phone number, ``(?:\+\d{1,3}[\s.-]?)?\(?\d{2,4}\)?[\s.-]\d{3,4}[\s.-]\d{3,4}\b``, is found where this
#: matches right after a digit (``_has_phone``).
_PHONE_CORE = re.compile(r"\d\)?[\s.-]\d{3,4}[\s.-]\d{3,4}\b")
# Postal addresses, each starting a word (checked by ``_word_start``). A German street is looked for only
# where its suffix and number are (a capitalised word is everywhere).
# "Dr" followed by ". Name" is a title, not a street ("2019 By Dr. Jane Doe"); "By", "On", ... start
# no street name.
_US_STREET = re.compile(
    r"\d{1,5}\s+(?!(?:By|On|In|At|From|To|And|Of|For|With|The)\s)(?:[A-Z][a-z]+\s){1,3}"
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr(?!\.\s+[A-Z])|Way|Suite)\b"
)
_GERMAN_STREET = re.compile(r"[A-Z][a-zäöüß]+(?:straße|strasse|weg|platz|allee)\s+\d{1,4}\b")
_GERMAN_STREET_CORE = Phrases(("straße", "strasse", "weg", "platz", "allee"), suffix=r"\s+\d")
_PO_BOX = Phrases([r"P\.?O\.? Box \d"])
_WORD = re.compile(r"\w+")


def _word_start(text: str, at: int) -> bool:
    """Whether a match at ``at`` starts a word (what a leading ``\\b`` checks: no word character before)."""
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")


def _token_start(text: str, at: int) -> bool:
    """Whether a match at ``at`` starts a class/id token (whitespace, "_" or "-" before, or nothing)."""
    return at == 0 or text[at - 1].isspace() or text[at - 1] in "_-"


def _starts(pattern: re.Pattern[str], text: str, start_ok: Start) -> Iterator[int]:
    """Offsets of the matches ``finditer`` would give if the start condition were part of the pattern
    (for patterns that start with a character class, which ``crawler.phrases`` cannot look for)."""
    position = 0
    while match := pattern.search(text, position):
        if start_ok(text, match.start()):
            yield match.start()
            position = match.end()
        else:
            position = match.start() + 1


def _found(pattern: re.Pattern[str], text: str, start_ok: Start) -> bool:
    """Whether ``_starts`` finds at least one match."""
    return next(_starts(pattern, text, start_ok), None) is not None


def _has_phone(text: str) -> bool:
    """Whether the phone pattern (``_PHONE_CORE``'s comment) matches: its optional prefix changes nothing
    about whether it does, and its ``\\d{2,4}`` ends with the core's first digit and the one before it.
    One scan for the core instead of a second scan for the whole pattern (a third of the pages)."""
    position = 0
    while match := _PHONE_CORE.search(text, position):
        at = match.start()
        if at > 0 and text[at - 1].isdecimal():  # what \d matches (Unicode decimal digits)
            return True
        position = at + 1
    return False


def _has_address(text: str) -> bool:
    """A phone number or a postal address in the text."""
    return (
        _has_phone(text)
        or _found(_US_STREET, text, _word_start)
        or _PO_BOX.found(text, _word_start)
        or (_GERMAN_STREET_CORE.found(text) and _found(_GERMAN_STREET, text, _word_start))
    )


class _Lines:
    """Lines joined and lower-cased once, so that one scan per pattern finds the lines it matches (much
    faster than a case-insensitive search per line)."""

    def __init__(self, lines: list[str]) -> None:
        joined = "\n".join(lines)
        self.text = joined.lower()
        if len(self.text) != len(joined):  # a character whose lower case is longer ("İ")
            lines = [line.lower() for line in lines]
            self.text = "\n".join(lines)
        self.line_starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))

    def matching(self, phrases: Phrases, start_ok: Start | None = None) -> set[int]:
        """Indexes of the lines that contain a match of lower-case ``phrases`` (none spans lines)."""
        return {
            bisect.bisect_right(self.line_starts, at) - 1 for at in phrases.positions(self.text, start_ok)
        }

    def count(self, phrases: Phrases, start_ok: Start | None = None) -> int:
        return len(self.matching(phrases, start_ok))

    def any(self, phrases: Phrases, start_ok: Start | None = None) -> bool:
        return phrases.found(self.text, start_ok)


def page_signals(
    tree: LexborHTMLParser, data: StructuredData, text_full: str, text_main: str
) -> dict[str, Any]:
    """Counts and flags for SIGNALS_TYPE, from the parsed page and its extracted texts."""
    blocks = [line for line in text_full.splitlines() if line.strip()]
    attributes: list[str] = []
    elements: dict[str, list[tuple[LexborNode, dict[str, str | None]]]] = {
        "iframe": [], "script": [], "button": [], "dialog": [], "a": []
    }  # fmt: skip
    for node in distinct_nodes(tree, "[class], [id], iframe, script, button, dialog, a"):
        attrs = node.attributes
        if "class" in attrs or "id" in attrs:
            attributes.append(f"{attrs.get('class') or ''} {attrs.get('id') or ''}".replace("\n", " "))
        if node.tag in elements:
            elements[node.tag].append((node, attrs))
    iframes, scripts = elements["iframe"], elements["script"]
    sources = [attrs.get("src") or "" for _, attrs in iframes + scripts]  # no src: "" matches nothing
    links = [(link.text(deep=True).strip(), attrs.get("href") or "") for link, attrs in elements["a"]]
    link_lines = _Lines([f"{text} {href}".replace("\n", " ") for text, href in links])
    buttons = _Lines([node.text(deep=True).replace("\n", " ") for node, _ in elements["button"]])
    class_lines = _Lines(attributes)
    visible = sum(len(line) for line in blocks)
    return {
        "ad_label_count": sum(1 for line in blocks if len(line) < 40 and _AD_LABEL.match(line))
        + class_lines.count(_AD_TOKEN, _token_start)
        + _Lines(sources).count(_AD_SRC),
        "affiliate_cta_count": len(
            link_lines.matching(_CTA_TEXT, _word_start) | link_lines.matching(_AFFILIATE_HREF)
        )
        + buttons.count(_CTA_TEXT, _word_start),
        "link_density": round(min(1.0, sum(len(t) for t, _ in links) / visible), 4) if visible else 0.0,
        "text_fragmentation": round(sum(1 for b in blocks if len(b.strip()) < 40) / len(blocks), 4)
        if blocks
        else 0.0,
        "popup_overlay_count": class_lines.count(_OVERLAY_WORDS) + len(elements["dialog"]),
        "iframe_count": len(iframes),
        "script_count": len(scripts),
        "has_about_link": link_lines.any(_ABOUT, _word_start),
        "has_contact_link": link_lines.any(_CONTACT, _word_start)
        or any(h.startswith("mailto:") for _, h in links),
        "has_address": _has_address(text_full),
        "has_privacy_link": link_lines.any(_PRIVACY, _word_start),
        "schema_org_types": data.types,
        "schema_org_organization": schema_organization(data),
        "schema_org_person": schema_person(data),
        "word_count": len(_WORD.findall(text_main)),
        "hidden_chars": 0,  # set by crawler.manipulation.vet_page from the visibility pass
        "hidden_kinds": [],
    }


def text_signals(text: str) -> dict[str, Any]:
    """Signals of a page without markup (PDF, plain text): only the text-based ones are known."""
    blocks = [line for line in text.splitlines() if line.strip()]
    return {
        "ad_label_count": sum(1 for line in blocks if _AD_LABEL.match(line)),
        "affiliate_cta_count": _CTA_TEXT.count_apart(text.lower(), _word_start),
        "link_density": 0.0,
        "text_fragmentation": round(sum(1 for b in blocks if len(b.strip()) < 40) / len(blocks), 4)
        if blocks
        else 0.0,
        "popup_overlay_count": 0,
        "iframe_count": 0,
        "script_count": 0,
        "has_about_link": False,
        "has_contact_link": False,
        "has_address": _has_address(text),
        "has_privacy_link": False,
        "schema_org_types": [],
        "schema_org_organization": None,
        "schema_org_person": None,
        "word_count": len(_WORD.findall(text)),
        "hidden_chars": 0,
        "hidden_kinds": [],
    }
