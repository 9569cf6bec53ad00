"""Rule-based scores for seven dimensions from a page record's metadata, signals and text.

Each function returns ``(score, justification)``. These are approximations of what an LLM judge
reads from a page, not replacements for it; see docs/judge.md for what each rule can and cannot see.
"""

from __future__ import annotations

import datetime as dt
import re

from crawler.manipulation import (
    CITATION_CUES,
    CREDENTIALS,
    date_contradicted,
    name_visible,
    newest_visible_year,
    update_notice,
)
from judge.packet import PagePacket

_GENERIC_AUTHORS = re.compile(
    r"^(admin|administrator|staff|team|editor|editors|editorial|webmaster|guest|"
    r"author|news desk|newsroom|contributor)s?\b",
    re.I,
)
_HYPE = re.compile(
    r"(!{2,}|\byou won'?t believe\b|\bshocking\b|\bmust[- ]see\b|\bunbelievable\b|"
    r"\bdestroy(s|ed)?\b|\bexposed\b|\bthe truth about\b|\bwake up\b)",
    re.I,
)
_OPINION = re.compile(r"\b(I think|I believe|in my opinion|we believe|obviously|clearly)\b", re.I)


def _parse_date(value: str | None) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def freshness(page: PagePacket, today: dt.date) -> tuple[int, str]:
    """Age of the last-updated date, else the publication date, against ``today``.

    What the visible page shows decides (docs/judge.md): a last-updated date counts only with a
    visible update notice of its year, and a date newer than every year the page shows is replaced
    by the middle of the newest year it shows.
    """
    modified = page.modified_date if update_notice(page.text, page.modified_date) else None
    published = page.published_date
    if date_contradicted(published, page.text):
        published = f"{newest_visible_year(page.text)}-07-01"
    for label, value in (("updated", modified), ("published", published)):
        date = _parse_date(value)
        if date is None:
            continue
        days = (today - date).days
        if days < -2:
            return 3, f"The {label} date {date} lies after today; treated as undated."
        years = days / 365.25
        score = 5 if years <= 1 else 4 if years <= 2 else 3 if years <= 5 else 2
        return score, f"{label.capitalize()} {date}, {max(days, 0)} days before {today}."
    return 3, "No publication or update date found; treated as undated evergreen content."


def accountability(page: PagePacket) -> tuple[int, str]:
    """Named author (with credential cues) > generic byline > organisation only > nobody.

    Only names a reader can see count (the visible text shows them), and a credential only when the
    visible text shows it next to the name: what structured data alone claims earns nothing.
    """
    names = [a.strip() for a in page.authors if a and a.strip()]
    person = page.signals.get("schema_org_person")
    if person and person not in names:
        names.append(person)
    names = [n for n in names if name_visible(n, page.text)]
    real = [n for n in names if not _GENERIC_AUTHORS.match(n)]
    if real:
        window = page.text[:3000]
        credentialed = any(
            CREDENTIALS.search(window[max(0, i - 80) : i + len(surname) + 80])
            for n in real
            for surname in [_surname(n)]
            if surname
            for i in [window.find(surname)]
            if i >= 0
        )
        if credentialed:
            return 5, f"Named author {real[0]} with a stated role or credential."
        return 4, f"Named author: {real[0]}."
    if names:
        return 3, f"Only a generic byline: {names[0]}."
    if _publisher(page):
        return 3, f"No person named; published by {_publisher(page)}."
    return 2, "No author named on the visible page."


def _surname(name: str) -> str:
    """The last word of a name without titles or degrees ("Dr. Jane Doe, MD" -> "Doe")."""
    words = re.findall(r"[^\W\d_]{2,}", CREDENTIALS.sub(" ", name))
    return words[-1] if words else ""


def _publisher(page: PagePacket) -> str | None:
    """The publisher structured data names, if the visible page or the domain shows it too."""
    name = page.signals.get("schema_org_organization")
    if not name:
        return None
    letters = re.sub(r"[^a-z0-9]", "", name.casefold())
    label = (page.domain or "").split(".")[0]
    if name_visible(name, page.text) or (letters and label and (letters in label or label in letters)):
        return name
    return None


def transparency(page: PagePacket) -> tuple[int, str]:
    """Address/phone, About and Contact links, and a named publisher."""
    s = page.signals
    about, contact, address = (
        bool(s.get("has_about_link")),
        bool(s.get("has_contact_link")),
        bool(s.get("has_address")),
    )
    org = bool(_publisher(page))
    if address and (about or org):
        return 5, "Address or phone disclosed along with an About page or a named publisher."
    if about and (contact or org):
        return 4, "About page and a contact route or a named publisher, no address."
    if about or contact or org or address:
        return 3, "Only partial ownership information (" + ", ".join(
            n
            for n, v in (("about", about), ("contact", contact), ("publisher", org), ("address", address))
            if v
        ) + ")."
    return 2, "No About, contact or ownership information found."


def layout(page: PagePacket) -> tuple[int, str]:
    """Penalty points for ad labels, affiliate calls to action, overlays, iframes and fragmentation."""
    s = page.signals
    words = max(int(s.get("word_count") or len(page.text.split())), 1)
    ads = int(s.get("ad_label_count") or 0)
    ctas = int(s.get("affiliate_cta_count") or 0)
    overlays = int(s.get("popup_overlay_count") or 0)
    iframes = int(s.get("iframe_count") or 0)
    fragmentation = float(s.get("text_fragmentation") or 0.0)
    link_density = float(s.get("link_density") or 0.0)
    per_kword = (ads + ctas) * 1000 / words
    penalty = (
        min(per_kword / 4, 2.0)
        + min(overlays, 2) * 0.75
        + (0.5 if iframes >= 5 else 0)
        + (0.5 if fragmentation > 0.6 else 0)
        + (0.5 if link_density > 0.5 else 0)
    )
    score = max(1, min(5, round(5 - penalty)))
    return score, (
        f"{ads} ad labels, {ctas} affiliate calls to action ({per_kword:.1f} per 1k words), "
        f"{overlays} overlays, "
        f"{iframes} iframes, fragmentation {fragmentation:.2f}."
    )


def factual_support(page: PagePacket, authority: int) -> tuple[int, str]:
    """Citation cues in the text, moderated by the domain's authority (the text is not fact-checked)."""
    cues = len(CITATION_CUES.findall(page.text[:50000]))
    if len(page.text) < 300:
        return 2, "Too little text to support any claim."
    base = 4 if cues >= 3 else 3
    if authority >= 5 and cues >= 1:
        base = 5
    elif authority <= 2:
        base = min(base, 2 if cues == 0 else 3)
    return base, f"{cues} citation or sourcing cues; domain authority {authority}."


def objectivity(page: PagePacket) -> tuple[int, str]:
    """Hype phrases, first-person opinion markers, exclamation and all-caps density."""
    text = page.text[:50000]
    words = max(len(text.split()), 1)
    hype = len(_HYPE.findall(text))
    opinion = len(_OPINION.findall(text))
    exclaim = text.count("!") * 1000 / words
    caps = sum(1 for w in text.split() if len(w) > 3 and w.isupper()) * 1000 / words
    penalty = min(hype, 3) * 0.6 + min(opinion, 5) * 0.2 + min(exclaim / 5, 1.5) + min(caps / 20, 1.0)
    score = max(1, min(5, round(4.5 - penalty)))
    return score, (
        f"{hype} sensational phrases, {opinion} opinion markers, {exclaim:.1f} exclamations and "
        f"{caps:.1f} all-caps words per 1k words."
    )


#: Points taken from a dimension for each kind of manipulation the crawler flagged (docs/judge.md):
#: a page that tries to game the judge is manipulative (objectivity, layout), and a claim it makes
#: only to machines costs the dimension it targeted.
MANIPULATION_PENALTIES: dict[str, dict[str, int]] = {
    "prompt_injection": {"objectivity_tone": 2, "layout_ad_density": 2},
    "hidden_text": {"objectivity_tone": 1, "layout_ad_density": 1},
    "keyword_stuffing": {"objectivity_tone": 1, "layout_ad_density": 1},
    "unverified_structured_data": {"accountability": 1},
    "date_mismatch": {"freshness": 1},
}


def penalise(page: PagePacket, key: str, answer: tuple[int, str]) -> tuple[int, str]:
    """A dimension's answer lowered for the manipulation flagged on the page (never below 1)."""
    kinds = [k for k in page.manipulation if key in MANIPULATION_PENALTIES.get(k, {})]
    if not kinds:
        return answer
    points = sum(MANIPULATION_PENALTIES[k][key] for k in kinds)
    score, why = answer
    return max(1, score - points), f"{why} Lowered by {points} for manipulation: {', '.join(kinds)}."
