"""Layout and trust signals of a page (SIGNALS_TYPE): the cues the judge's layout and meta stages use."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.metadata import StructuredData, schema_organization, schema_person
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
#: One of those tokens inside a lower-cased class/id line; the token's start is checked by
#: ``_starts(..., _token_start)`` (a leading look-behind would make every position a try).
_AD_TOKEN = re.compile("(?:" + "|".join(sorted(_AD_TOKENS, key=lambda t: (-len(t), t))) + r")(?![^\s_-])")
# The patterns below are lower-case and run on lower-cased text (faster than re.IGNORECASE). Those
# that must start a word are written without their leading \b: ``_starts`` checks the boundary,
# which lets the regex engine skip to the alternatives' first letters instead of trying every position.
_AD_SRC = re.compile(
    r"doubleclick\.net|googlesyndication|adservice|amazon-adsystem|taboola|outbrain|adnxs|criteo"
)
_CTA_TEXT = re.compile(
    r"(buy now|buy it now|shop now|check (?:the )?price|see (?:the )?price|view (?:the )?deal|"
    r"get (?:the |this )?deal|"
    r"see deal|add to (?:cart|basket)|order now|get it now|jetzt kaufen|zum angebot|acheter|comprar)\b",
)
_AFFILIATE_PARAMS = "affid|aff_id|affiliate|aff|ref_id|clickref"
# Every alternative starts with a literal character (no "[?&]"), so the engine can skip ahead.
_AFFILIATE_HREF = re.compile(
    rf"amzn\.to/|amazon\.[a-z.]+/.*[?&]tag=|\?(?:{_AFFILIATE_PARAMS})=|&(?:{_AFFILIATE_PARAMS})=|/go/|/out/|"
    r"/recommends/|"
    r"skimlinks|awin1\.com|shareasale|rstyle\.me|shopstyle|click\.linksynergy|anrdoezrs|tkqlhce|dpbolvw|jdoqocy|"
    r"prf\.hn|avantlink|go\.redirectingat|impact\.com|sjv\.io",
)
#: Class/id words of an overlay, found with ``str.find`` (literal words: three times faster than a regex
#: alternation of them, whose first letters are everywhere in class names).
_OVERLAY_WORDS = (
    "modal", "overlay", "popup", "pop-up", "lightbox", "newsletter-signup", "subscribe-modal",
    "interstitial", "paywall", "cookiebanner", "cookie-banner", "cookiewall", "cookie-wall",
    "cookieconsent", "cookie-consent", "gdpr", "consent-banner", "exit-intent",
)  # fmt: skip
_ABOUT = re.compile(
    r"(about(?:[\s-]us)?|who we are|our (?:team|mission|story)|über uns|impressum|a propos|"
    r"quiénes somos)\b",
)
_CONTACT = re.compile(r"(contact(?:[\s-]us)?|kontakt|contacto|contattaci|get in touch)\b")
_PRIVACY = re.compile(r"(privacy|datenschutz|confidentialit|privacidad|cookie policy)\b")
_PHONE = re.compile(r"(?:\+\d{1,3}[\s.-]?)?\(?\d{2,4}\)?[\s.-]\d{3,4}[\s.-]\d{3,4}\b")
#: What every _PHONE match contains, starting with a digit class: a fast scan rules most pages out.
_PHONE_CORE = re.compile(r"\d\)?[\s.-]\d{3,4}[\s.-]\d{3,4}\b")
# Postal addresses, each starting a word (checked by ``_starts``). A German street is looked for only
# where its suffix and number are (a capitalised word is everywhere).
# "Dr" followed by ". Name" is a title, not a street ("2019 By Dr. Jane Doe"); "By", "On", ... start
# no street name.
_US_STREET = re.compile(
    r"\d{1,5}\s+(?!(?:By|On|In|At|From|To|And|Of|For|With|The)\s)(?:[A-Z][a-z]+\s){1,3}"
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr(?!\.\s+[A-Z])|Way|Suite)\b"
)
_GERMAN_STREET = re.compile(r"[A-Z][a-zäöüß]+(?:straße|strasse|weg|platz|allee)\s+\d{1,4}\b")
_GERMAN_STREET_CORE = re.compile(r"(?:straße|strasse|weg|platz|allee)\s+\d")
_PO_BOX = re.compile(r"P\.?O\.? Box \d")
_WORD = re.compile(r"\w+")


def _word_start(text: str, at: int) -> bool:
    """Whether a match at ``at`` starts a word (what a leading ``\\b`` checks: no word character before)."""
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")


def _token_start(text: str, at: int) -> bool:
    """Whether a match at ``at`` starts a class/id token (whitespace, "_" or "-" before, or nothing)."""
    return at == 0 or text[at - 1].isspace() or text[at - 1] in "_-"


Start = Callable[[str, int], bool]


def _starts(pattern: re.Pattern[str], text: str, start_ok: Start | None = None) -> Iterator[int]:
    """Offsets of the matches ``finditer`` would give if the start condition were part of the pattern."""
    if start_ok is None:
        yield from (match.start() for match in pattern.finditer(text))
        return
    position = 0
    while match := pattern.search(text, position):
        if start_ok(text, match.start()):
            yield match.start()
            position = match.end()
        else:
            position = match.start() + 1


def _found(pattern: re.Pattern[str], text: str, start_ok: Start | None = None) -> bool:
    """Whether ``_starts`` finds at least one match."""
    return next(_starts(pattern, text, start_ok), None) is not None


def _has_address(text: str) -> bool:
    """A phone number or a postal address in the text."""
    return bool(
        (_PHONE_CORE.search(text) and _PHONE.search(text))
        or _found(_US_STREET, text, _word_start)
        or _found(_PO_BOX, text, _word_start)
        or (_GERMAN_STREET_CORE.search(text) and _found(_GERMAN_STREET, text, _word_start))
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

    def matching(self, pattern: re.Pattern[str], start_ok: Start | None = None) -> set[int]:
        """Indexes of the lines that contain a match of a lower-case ``pattern``."""
        return {bisect.bisect_right(self.line_starts, at) - 1 for at in _starts(pattern, self.text, start_ok)}

    def containing(self, words: tuple[str, ...]) -> int:
        """How many lines contain one of the lower-case ``words``."""
        found: set[int] = set()
        for word in words:
            at = self.text.find(word)
            while at >= 0:
                line = bisect.bisect_right(self.line_starts, at) - 1
                found.add(line)
                if line + 1 == len(self.line_starts):
                    break
                at = self.text.find(word, self.line_starts[line + 1])
        return len(found)

    def count(self, pattern: re.Pattern[str], start_ok: Start | None = None) -> int:
        return len(self.matching(pattern, start_ok))

    def any(self, pattern: re.Pattern[str], start_ok: Start | None = None) -> bool:
        return _found(pattern, self.text, start_ok)


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
        "popup_overlay_count": class_lines.containing(_OVERLAY_WORDS) + len(elements["dialog"]),
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
        "affiliate_cta_count": sum(1 for _ in _starts(_CTA_TEXT, text.lower(), _word_start)),
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
