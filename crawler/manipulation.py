"""Manipulation of the judge, detected at extraction: the page record's ``manipulation`` list.

The vocabulary (``MANIPULATION_KINDS``):

- ``hidden_text``: hidden content that would have changed a signal or the judge's input in the page's
  favour (credentials, citations, bylines, ownership or contact details, dates, prose); menus,
  dialogs, cookie notices and screen-reader labels hidden for a reason are not flagged;
- ``prompt_injection``: text addressed to an AI evaluator (instructions to ignore the rubric, to give
  a score, chat-template tokens, forged prompt fences), visible or hidden;
- ``keyword_stuffing``: blocks of repeated terms;
- ``unverified_structured_data``: a byline, credential or publisher stated only in structured data
  (JSON-LD, microdata, ``<meta>``) that the visible page contradicts or does not show;
- ``date_mismatch``: a structured date the visible page contradicts (a recent ``dateModified`` on a
  page that shows only an old date and no update notice, a publication date far from the visible one).
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from typing import Any

from crawler.metadata import AUTHOR_META, StructuredData, type_names
from crawler.phrases import Phrases
from crawler.visibility import HiddenText

MANIPULATION_KINDS = (
    "hidden_text",
    "prompt_injection",
    "keyword_stuffing",
    "unverified_structured_data",
    "date_mismatch",
)

#: A stated credential or professional role near a name ("Dr.", "Prof.", "M.D.", "MD", "PhD", "J.D.", ...).
CREDENTIALS = re.compile(
    r"(?<![\w.])(?:Dr|Prof|Drs)\.(?=\s|$)|(?<![\w.])(?:M\.D\.|J\.D\.|D\.O\.|Ph\.\s?D\.?|R\.N\.)"
    r"|(?<![\w.])(?:MD|PhD|DPhil|MPH|DrPH|RN|JD|MSc|DO|DDS|PharmD|FRCP|MBBS|LLM)(?![\w])"
    r"|(?i:(?<!\w)(?:professor|doctor|physician|correspondent|reporter|editor|researcher|scientist|"
    r"epidemiologist|nutritionist|dietitian|attorney|lawyer|board[- ]certified)(?!\w))"
)
#: Academic and professional titles and degrees only (no role words): what a fake byline claims.
STRONG_CREDENTIALS = re.compile(
    r"(?<![\w.])(?:Dr|Prof)\.(?=\s|$)|(?<![\w.])(?:M\.D\.|J\.D\.|Ph\.\s?D\.?)|(?<![\w.])(?:MD|PhD|MPH|DrPH|JD|PharmD)(?!\w)"
)
#: A job title that claims expertise (not a newsroom role such as reporter or editor).
_EXPERT_TITLE = re.compile(
    r"(?i:professor|physician|doctor|surgeon|psychiatrist|psychologist|pharmacist|dietitian|nutritionist|nurse|"
    r"attorney|lawyer|board[- ]certified)|" + STRONG_CREDENTIALS.pattern
)
#: "Dr. Jane Doe", "Prof. Jane Doe" or "Jane Doe, MD": a name with its claimed credential.
_CREDENTIALED_NAME = re.compile(
    r"\b(?:Dr|Prof)\.\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){0,2})"
    r"|\b([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){1,2}),?\s+(?:M\.D\.|MD|Ph\.?\s?D\.?|PhD|MPH|J\.D\.|JD)(?!\w)"
)
_BYLINE = re.compile(r"^\s*(?:written |posted |reviewed )?by\s+[A-Z][\w'.-]+\s+[A-Z]", re.I)
#: Cues that a text cites or sources its claims.
CITATION_CUES = re.compile(
    r"(\bdoi\.org/|\bdoi:|\bet al\.|\[\d{1,3}\]|\bReferences\b|\bSources?:|\bStudy\b|"
    r"\baccording to\b|\bpublished in\b|\bjournal\b|\bpeer[- ]reviewed\b)",
    re.I,
)
_OWNERSHIP = re.compile(
    r"\b(?:about us|contact us|our team|our mission|editorial (?:policy|board|standards)|fact[- ]checked|"
    r"medically reviewed|headquarter(?:s|ed)|p\.?o\.? box \d|suite \d+|\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4})\b",
    re.I,
)
_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous|prior|above|"
    r"earlier|preceding|system|original|other)\s+(?:instructions?|prompts?|rules|directions|guidelines)"
    r"|\b(?:rate|score|grade|evaluate|rank)\s+(?:this|the)\s+(?:page|source|article|site|website|content|text)\s+"
    r"(?:as\s+|with\s+|at\s+)?(?:an?\s+)?(?:5\b|five\b|10\b|perfect|highest|maximum|top)"
    r"|\b(?:give|assign)\s+(?:this|the)\s+(?:page|source|article|site)\s+(?:an?\s+)?(?:5|five|perfect|full|top)"
    r"|\b(?:new|updated|revised)\s+(?:system\s+)?instructions?\s*:"
    r"|\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+)?(?:ai|llm|language model|evaluator|grader|"
    r"assistant|judge)s?\b"
    r"|\bas an? (?:ai|language model) (?:evaluator|judge|grader)\b"
    r"|<\|im_(?:start|end)\|>|<\|(?:system|assistant|user|endoftext)\|>|\[/?inst\]|<</?sys>>"
    r"|\"(?:semantic_relevance|factual_accuracy|objectivity_tone|freshness|accountability|transparency|authority|"
    r"layout_ad_density)\"\s*:"
    r"|\bscore stage\b|^\s*(?:<<<|>>>)\s*$|^\s*(?:end of (?:the )?page(?: text)?|page text ends?)\b",
    re.I | re.M,
)


#: What every ``_INJECTION`` match contains, in lower case: its alternatives without the leading ``\b`` and
#: line anchors, looked for in lower-cased text with ``crawler.phrases`` (``_INJECTION`` alone took 3.7 ms
#: on a 10 kB page, a fifth of the extraction: re.IGNORECASE and a leading ``\b`` make the engine try
#: every position). Finds a superset of ``_INJECTION``'s matches, so only the texts it matches need the
#: exact pattern.
_INJECTION_CUES = Phrases(
    (
        *(
            word
            + r"\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous|prior|above|earlier|preceding|system|"
            r"original|other)\s+(?:instructions?|prompts?|rules|directions|guidelines)"
            for word in ("ignore", "disregard", "forget", "override")
        ),
        *(
            word + r"\s+(?:this|the)\s+(?:page|source|article|site|website|content|text)\s"
            for word in ("rate", "score", "grade", "evaluate", "rank")
        ),
        *(word + r"\s+(?:this|the)\s+(?:page|source|article|site)\s" for word in ("give", "assign")),
        r"instructions?\s*:",
        *(word + r"\s+(?:to|for)\s" for word in ("note", "message", "instruction", "instructions")),
        r"as an? (?:ai|language model) ",
        r"<\|",
        r"\[inst\]",
        r"\[/inst\]",
        r"<</?sys>>",
        *(
            f'"{name}"'
            for name in (
                "semantic_relevance",
                "factual_accuracy",
                "objectivity_tone",
                "freshness",
                "accountability",
                "transparency",
                "authority",
                "layout_ad_density",
            )
        ),
        "score stage",
        "<<<",
        ">>>",
        r"end of (?:the )?page",
        "page text end",
    )
)
#: Characters that re.IGNORECASE matches to an ASCII letter but ``str.lower`` does not turn into one
#: (dotted/dotless i, long s, Kelvin sign): a text holding one is searched with the exact pattern.
_CASE_SPECIALS = re.compile("[\u0130\u0131\u017f\u212a]")
_WORD = re.compile(r"[^\W\d_]{3,}")
_YEAR = re.compile(r"(?<!\d)(?:199\d|20\d\d)(?!\d)")
_WORD_COUNTED = re.compile(r"\w+")  # as crawler.signals counts words
_UPDATE_NOTICE = re.compile(
    r"\b(?:updated|last (?:updated|modified|reviewed|edited)|modified|revised|reviewed on|aktualisiert|"
    r"zuletzt|geändert|mis à jour|actualizado|actualización|aggiornato|bijgewerkt|opdateret|uppdaterad)\b",
    re.I,
)


_DATED_NOTICE = re.compile(_UPDATE_NOTICE.pattern + r"\W{0,5}(?:on\W+)?(?:\w+\W+){0,2}\d", re.I)


def injection_found(text: str) -> bool:
    """Whether a text addresses an AI evaluator (an attempt to steer the judge)."""
    if not _INJECTION_CUES.found(text.lower()) and not _CASE_SPECIALS.search(text):
        return False
    return bool(_INJECTION.search(text))


def stuffed_lines(text: str) -> list[str]:
    """Lines that repeat a few terms over and over (keyword stuffing): 12+ words drawn from at most 15
    distinct ones, fewer than 30 % of them distinct. A repeated headline (a news ticker) or caption
    has more distinct words and is not flagged."""
    return [line for line in text.splitlines() if len(line) >= 60 and _is_stuffed(line)]


def _is_stuffed(line: str) -> bool:
    """Reads the words until a 16th distinct one decides the line (prose gets there in ~20 words)."""
    ascii_line = line.isascii()
    # lower-cased once where that cannot change the words (a non-ASCII lower case may be longer)
    source = line.lower() if ascii_line else line
    distinct: set[str] = set()
    count = 0
    for match in _WORD.finditer(source):
        distinct.add(match.group() if ascii_line else match.group().lower())
        count += 1
        if len(distinct) > 15:
            return False
    return count >= 12 and len(distinct) < 0.3 * count


def without_lines(text: str, lines: list[str]) -> str:
    """The text without the given lines."""
    drop = {line.strip() for line in lines}
    return "\n".join(line for line in text.splitlines() if line.strip() not in drop)


def favourable_hidden(hidden: str, visible: str, authors: list[str]) -> bool:
    """Whether hidden content says something for the page that the visible page does not: a
    credential, enough citation cues to count, contact or ownership details, an update notice, or a
    byline where no author is named."""
    if not hidden.strip():
        return False
    head = visible[:20000]
    if STRONG_CREDENTIALS.search(hidden) and not STRONG_CREDENTIALS.search(head):
        return True
    for match in _CREDENTIALED_NAME.finditer(hidden):
        if not name_visible(match.group(1) or match.group(2), visible):
            return True
    # "[3]" in hidden text is as often a slide or list index as a reference: not counted
    added = sum(1 for cue in CITATION_CUES.findall(hidden) if not cue.startswith("["))
    shown = _citations_shown(head) if added else 3
    if shown < 3 <= shown + added:
        return True
    if len(set(_OWNERSHIP.findall(hidden))) >= 2 and not _OWNERSHIP.search(visible):
        return True
    if _DATED_NOTICE.search(hidden) and not update_notice(visible):
        return True
    return not authors and any(_BYLINE.match(line) for line in hidden.splitlines())


def _citations_shown(text: str) -> int:
    """How many citation cues the text shows, counted up to 3 (all that ``favourable_hidden`` needs:
    counting them all took a fifth of the manipulation stage)."""
    return sum(1 for _ in itertools.islice(CITATION_CUES.finditer(text), 3))


def update_notice(text: str, date: str | None = None) -> bool:
    """Whether the visible text says the page was updated (on ``date``: its year within 60 characters
    after the notice)."""
    if date is None:
        return bool(_UPDATE_NOTICE.search(text))
    return any(date[:4] in text[m.end() : m.end() + 60] for m in _UPDATE_NOTICE.finditer(text))


def newest_visible_year(text: str) -> int | None:
    """The latest year (1990 to next year) the visible text mentions, or None when it shows none."""
    limit = dt.date.today().year + 1
    years = [int(y) for y in _YEAR.findall(text)]
    years = [y for y in years if y <= limit]
    return max(years) if years else None


def date_contradicted(date: str | None, text: str) -> bool:
    """Whether the visible text contradicts a date: it mentions years, the newest two or more years
    before the date's (a page dated 2026 that shows nothing after 2019)."""
    newest = newest_visible_year(text) if date else None
    return date is not None and newest is not None and int(date[:4]) - newest >= 2


def name_visible(name: str, visible: str) -> bool:
    """Whether a person's or publisher's name appears in the visible text (all of its words of three
    letters or more, so that "Dr. Jane Q. Doe, MD" is found as "Jane Doe")."""
    words = [w.casefold() for w in re.findall(r"[^\W\d_]{3,}", name)]
    folded = visible.casefold()
    return bool(words) and all(w in folded for w in words)


def _structured_credentials(data: StructuredData) -> list[str]:
    """Credentials that structured data claims for a page's people: titles and degrees in their names,
    and their ``honorificPrefix``/``honorificSuffix``/``jobTitle``/``hasCredential``."""
    claims = []
    for node in data.nodes:
        people = [node.get("author"), node.get("creator"), node.get("reviewedBy")]
        if "person" in [t.lower() for t in type_names(node)]:
            people.append(node)
        for person in people:
            for item in person if isinstance(person, list) else [person]:
                if isinstance(item, dict):
                    claims += [
                        str(item.get(k))
                        for k in ("honorificPrefix", "honorificSuffix", "hasCredential")
                        if item.get(k)
                    ]
                    claims += [m.group() for m in STRONG_CREDENTIALS.finditer(str(item.get("name") or ""))]
                    if _EXPERT_TITLE.search(str(item.get("jobTitle") or "")):
                        claims.append(str(item["jobTitle"]))
                elif isinstance(item, str):
                    claims += [m.group() for m in STRONG_CREDENTIALS.finditer(item)]
    for key in AUTHOR_META:
        for value in data.meta.get(key, ()):
            claims += [m.group() for m in STRONG_CREDENTIALS.finditer(value)]
    return claims


def _unseen_credentials(data: StructuredData, visible: str) -> bool:
    """Whether structured data claims a credential that the visible page never shows."""
    claims = _structured_credentials(data)
    if not claims:
        return False
    shown = {re.sub(r"\W", "", m.group()).casefold() for m in CREDENTIALS.finditer(visible[:30000])}
    return any(
        re.sub(r"\W", "", c).casefold()[:12] not in shown and c.casefold() not in visible.casefold()
        for c in claims
    )


def _date_mismatch(record: dict[str, Any], visible: str, now: dt.date) -> bool:
    """A date that would make an old page fresh (within the last year) against what the page shows:
    newer than every year the visible text mentions by two years or more, or a ``dateModified`` two
    or more years after publication with no dated update notice."""
    modified, published = record["modified_date"], record["published_date"]
    for date in (published, modified):
        if date and (now - dt.date.fromisoformat(date)).days <= 366 and date_contradicted(date, visible):
            return True
    if not modified or not published:
        return False
    modified_on, published_on = dt.date.fromisoformat(modified), dt.date.fromisoformat(published)
    recent_update = (now - modified_on).days <= 366 and (modified_on - published_on).days >= 730
    return recent_update and not update_notice(visible, modified)  # the text search last: the slow part


def vet_page(
    record: dict[str, Any], data: StructuredData, hidden: HiddenText, now: dt.date | None = None
) -> dict[str, Any]:
    """Check an extracted HTML page against what a reader sees and set its ``manipulation`` list.

    Changes the record only where the page would otherwise gain: stuffed lines leave ``text_main``
    (and its word count). The hidden text is already gone (``crawler.visibility``); structured data
    stays in the record as stated, and the judge credits it only as docs/judge.md says.
    """
    kinds: set[str] = set()
    visible = record["text_full"] or ""
    signals = record["signals"]
    content_hidden = hidden.text()
    if injection_found(visible) or injection_found(hidden.text(include_chrome=True)):
        kinds.add("prompt_injection")
    stuffed = stuffed_lines(visible)
    if stuffed:
        record["text_main"] = without_lines(record["text_main"] or "", stuffed)
        signals["word_count"] = len(_WORD_COUNTED.findall(record["text_main"]))
    stuffed_hidden = stuffed_lines(content_hidden)
    if stuffed or stuffed_hidden:
        kinds.add("keyword_stuffing")
    if (
        stuffed_hidden
        or injection_found(content_hidden)
        or favourable_hidden(content_hidden, visible, record["authors"])
    ):
        kinds.add("hidden_text")
    if _unseen_credentials(data, visible):
        kinds.add("unverified_structured_data")
    if _date_mismatch(record, visible, now or dt.datetime.now(dt.UTC).date()):
        kinds.add("date_mismatch")
    signals["hidden_chars"] = hidden.chars
    signals["hidden_kinds"] = hidden.kinds()
    record["manipulation"] = [kind for kind in MANIPULATION_KINDS if kind in kinds]
    return record


def text_manipulation(text: str) -> list[str]:
    """Manipulation found in a document without markup (only what its text can show)."""
    kinds = set()
    if injection_found(text):
        kinds.add("prompt_injection")
    if stuffed_lines(text):
        kinds.add("keyword_stuffing")
    return [kind for kind in MANIPULATION_KINDS if kind in kinds]
