"""Page metadata from structured data: JSON-LD, ``<meta>`` tags, microdata and byline markup.

Structured data, when a page has it, is what the publisher states about itself; the heuristic
libraries (htmldate for dates) fill the gaps. Everything here works on one selectolax tree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from dateutil import parser as dateparser
from selectolax.lexbor import LexborHTMLParser

ARTICLE_TYPES = {
    "article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle",
    "opinionnewsarticle",
    "scholarlyarticle", "techarticle", "webpage", "medicalwebpage", "report", "review", "liveblogposting",
    "socialmediaposting", "discussionforumposting", "qapage", "howto", "recipe", "backgroundnewsarticle",
}  # fmt: skip
ORGANIZATION_TYPES = {
    "organization",
    "newsmediaorganization",
    "corporation",
    "educationalorganization",
    "governmentorganization",
    "ngo",
    "localbusiness",
    "medicalorganization",
    "onlinebusiness",
}
PUBLISHED_META = (
    "article:published_time",
    "og:published_time",
    "datepublished",
    "pubdate",
    "publishdate",
    "publish-date",
    "parsely-pub-date",
    "sailthru.date",
    "dc.date.issued",
    "dcterms.issued",
    "dc.date",
    "dcterms.date",
    "date",
    "citation_publication_date",
    "citation_date",
    "article.published",
)
MODIFIED_META = (
    "article:modified_time",
    "og:updated_time",
    "datemodified",
    "dcterms.modified",
    "dc.date.modified",
    "last-modified",
    "lastmod",
    "article.updated",
)
AUTHOR_META = (
    "author",
    "article:author",
    "parsely-author",
    "sailthru.author",
    "dc.creator",
    "dcterms.creator",
    "citation_author",
    "byl",
    "twitter:creator",
    "book:author",
)
_BYLINE_WORDS = (
    r"(?:written |posted |published |erstellt |geschrieben |verfasst |ein artikel |ein beitrag |escrito |"
    r"publié )?"
    r"(?:by|von|par|por|di|door|av|af)|autor(?:in)?|author|text|redaktion"
)
_BY_PREFIX = re.compile(rf"^\s*(?:{_BYLINE_WORDS})\s*[:\-]?\s+", re.I)
# "By Jane Doe" / "Ein Artikel von Jane Doe | 27.01.2022" as a line of the visible text.
_TEXT_BYLINE = re.compile(
    rf"^\s*(?:{_BYLINE_WORDS})\s*:?\s+((?:[A-ZÀ-Þ][\w'’.-]*\.?\s?){{1,4}})(?:\s*(?:[|,·•–-]|$))",
)
_NAME_SPLIT = re.compile(r"\s*(?:,|;|\||&|\band\b|\bund\b|\bet\b|\by\b|\be\b)\s*", re.I)
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_UTC_STAMP = re.compile(r"(?:\dZ|[+-]00:?00|\b(?:GMT|UTC))\s*$", re.I)
_JUNK_AUTHOR = re.compile(
    r"https?://|www\.|@|\d{4}|^\W*$|^(?:no author|unknown|anonymous|none|null|posted|published|updated|"
    r"alle artikel|all (?:articles|posts)|more|mehr|share|teilen|comments?|kommentare?|antworten|reply)\b|"
    r"\b(?:january|february|march|april|june|july|august|september|october|november|december|januar|februar|"
    r"märz|juni|juli|oktober|dezember)\b",
    re.I,
)


@dataclass
class StructuredData:
    """What a page states about itself."""

    nodes: list[dict[str, Any]] = field(default_factory=list)  # flattened JSON-LD objects
    meta: dict[str, list[str]] = field(default_factory=dict)  # <meta> name/property/itemprop -> contents
    types: list[str] = field(default_factory=list)  # schema.org @type / itemtype values

    def first_meta(self, names: tuple[str, ...]) -> str | None:
        for name in names:
            for value in self.meta.get(name, ()):
                if value.strip():
                    return value.strip()
        return None


def _walk_json(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        for item in value:
            yield from _walk_json(item)
    elif isinstance(value, dict):
        yield value
        for key in ("@graph", "mainEntity", "mainEntityOfPage", "itemListElement"):
            if isinstance(value.get(key), list | dict):
                yield from _walk_json(value[key])


def _parse_json_ld(text: str) -> Any:
    text = text.strip().removeprefix("<!--").removesuffix("-->").strip().rstrip(";")
    try:
        return json.loads(text)
    except ValueError:
        try:  # common breakage: raw newlines/tabs inside strings
            return json.loads(re.sub(r"[\n\r\t]+", " ", text))
        except ValueError:
            return None


def type_names(node: dict[str, Any]) -> list[str]:
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return [str(k).rsplit("/", 1)[-1] for k in kinds if k]


def read_structured_data(tree: LexborHTMLParser) -> StructuredData:
    data = StructuredData()
    for script in tree.css('script[type="application/ld+json"]'):
        parsed = _parse_json_ld(script.text(deep=True))
        data.nodes.extend(_walk_json(parsed))
    for meta in tree.css("meta"):
        attrs = meta.attributes
        key = attrs.get("property") or attrs.get("name") or attrs.get("itemprop")
        content = attrs.get("content")
        if key and content:
            data.meta.setdefault(key.strip().lower(), []).append(content)
    types = [t for node in data.nodes for t in type_names(node)]
    for node in tree.css("[itemtype]"):
        itemtype = node.attributes.get("itemtype") or ""
        types.extend(t.rstrip("/").rsplit("/", 1)[-1] for t in itemtype.split())
    data.types = list(dict.fromkeys(t for t in types if t))
    return data


def _article_nodes(data: StructuredData) -> list[dict[str, Any]]:
    """JSON-LD nodes describing the page's content, article types first."""
    articles = [n for n in data.nodes if any(t.lower() in ARTICLE_TYPES for t in type_names(n))]
    return articles + [n for n in data.nodes if n not in articles]


def _names(value: Any) -> list[str]:
    """Names from a JSON-LD author/publisher value: a string, a Person/Organization, or a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        name = value.get("name")
        if isinstance(name, list):
            name = " ".join(str(n) for n in name)
        if not name and (value.get("givenName") or value.get("familyName")):
            name = f"{value.get('givenName', '')} {value.get('familyName', '')}"
        return [str(name)] if name else []
    if isinstance(value, list):
        return [n for item in value for n in _names(item)]
    return []


def clean_author_names(raw: list[str], split: bool = True) -> list[str]:
    """Strip "By ...", split "A and B", drop URLs, handles, dates and over-long strings."""
    names: list[str] = []
    for text in raw:
        text = re.sub(r"\s+", " ", str(text)).strip()
        text = _BY_PREFIX.sub("", text)
        for part in _NAME_SPLIT.split(text) if split else [text]:
            part = part.strip(" .,:-–|")
            if 2 <= len(part) <= 60 and not _JUNK_AUTHOR.search(part) and len(part.split()) <= 6:
                names.append(part)
    return list(dict.fromkeys(names))


def _json_ld_authors(data: StructuredData) -> tuple[list[str], bool]:
    """Author names from JSON-LD, and whether they are only organizations (publisher as author)."""
    publisher = (schema_organization(data) or "").casefold()
    for node in _article_nodes(data):
        value = node.get("author") or node.get("creator")
        names = clean_author_names(_names(value), split=False)
        if names:
            values = value if isinstance(value, list) else [value]
            typed_org = all(
                isinstance(v, dict) and any(t.lower() in ORGANIZATION_TYPES for t in type_names(v))
                for v in values
            )
            return names, typed_org or all(n.casefold() == publisher for n in names)
    return [], False


def authors_from(tree: LexborHTMLParser, data: StructuredData, text: str = "") -> list[str]:
    """Authors, from the most explicit source that names a person: JSON-LD, author meta tags, byline
    markup, then a "By ..." line of the visible text. A publisher named as author (common in
    JSON-LD) is kept only when no person is named anywhere.

    Measured on the trafilatura pages with an author (found): trafilatura alone 0.55, this 0.71.
    """
    names, only_organizations = _json_ld_authors(data)
    if names and not only_organizations:
        return names
    for candidates in _other_author_sources(tree, data, text):
        found = clean_author_names(candidates)
        if found:
            return found
    return names


def _other_author_sources(tree: LexborHTMLParser, data: StructuredData, text: str) -> Iterator[list[str]]:
    for key in AUTHOR_META:
        yield data.meta.get(key, [])
    for selector in ('[itemprop="author"] [itemprop="name"]', '[itemprop="author"]', '[rel="author"]',
                     '[class*="byline"] [class*="author"]', '[class*="author-name"]', '[class*="byline"]',
                     '[class*="author"] a', '[class~="author"]', '[data-testid*="byline"] a',
                     '[class*="author"]'):  # fmt: skip
        found = [node.text(deep=True) for node in tree.css(selector)[:3]]
        yield [t for t in found if len(t.strip()) < 100]
    for line in text.splitlines()[:400]:
        match = _TEXT_BYLINE.match(line) if len(line) < 120 else None
        if match:
            yield [match.group(1)]


def normalise_date(value: Any, now: datetime | None = None) -> str | None:
    """An ISO ``YYYY-MM-DD`` from a date string, or None when it is absent, unparsable or implausible."""
    if not value or not isinstance(value, str | int | float):
        return None
    text = str(value).strip()
    match = _ISO_DATE.search(text)
    try:
        if match:
            parsed = datetime(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        else:
            parsed = dateparser.parse(text, fuzzy=False, ignoretz=True, dayfirst=not text[:4].isdigit())
    except (ValueError, OverflowError, TypeError):
        return None
    if parsed is None:
        return None
    now = now or datetime.now(UTC)
    if not 1995 <= parsed.year <= now.year + 1:
        return None
    return parsed.strftime("%Y-%m-%d")


def json_ld_published(data: StructuredData) -> str | None:
    """The raw ``datePublished`` (or ``dateCreated``) of the first content node that has a valid one."""
    for node in _article_nodes(data):
        value = node.get("datePublished") or node.get("dateCreated")
        if normalise_date(value):
            return str(value)
    return None


def in_utc(timestamp: str) -> bool:
    """Whether a timestamp is stated in UTC (``Z``, ``+00:00``, ``GMT``): its calendar day is then the
    publisher's local day only for sites near Greenwich (a US evening article is dated the next day)."""
    return bool(_UTC_STAMP.search(timestamp))


def structured_dates(data: StructuredData) -> tuple[str | None, str | None]:
    """(published, modified) as stated by JSON-LD, then by meta tags."""
    published = normalise_date(json_ld_published(data))
    modified = None
    for node in _article_nodes(data):
        modified = modified or normalise_date(node.get("dateModified"))
    published = published or normalise_date(data.first_meta(PUBLISHED_META))
    modified = modified or normalise_date(data.first_meta(MODIFIED_META))
    return published, modified


def site_name(data: StructuredData) -> str | None:
    named = data.first_meta(("og:site_name", "application-name", "al:ios:app_name", "twitter:site"))
    if named and not named.startswith("@"):
        return named
    organization = schema_organization(data)
    return organization or (named.lstrip("@") if named else None)


def schema_organization(data: StructuredData) -> str | None:
    """The publisher/organization named in JSON-LD."""
    for node in _article_nodes(data):
        names = _names(node.get("publisher"))
        if names:
            return names[0].strip() or None
    for node in data.nodes:
        if any(t.lower() in ORGANIZATION_TYPES for t in type_names(node)):
            names = _names(node)
            if names:
                return names[0].strip() or None
    return None


def schema_person(data: StructuredData) -> str | None:
    for node in _article_nodes(data):
        for author in node.get("author") if isinstance(node.get("author"), list) else [node.get("author")]:
            if isinstance(author, dict) and "person" in [t.lower() for t in type_names(author)]:
                names = _names(author)
                if names:
                    return names[0].strip() or None
    for node in data.nodes:
        if "person" in [t.lower() for t in type_names(node)]:
            names = _names(node)
            if names:
                return names[0].strip() or None
    return None


def title_of(tree: LexborHTMLParser, data: StructuredData) -> str | None:
    """og:title, then JSON-LD headline, then ``<title>``, then the first ``<h1>``."""
    title = data.first_meta(("og:title", "twitter:title"))
    if not title:
        for node in _article_nodes(data):
            if isinstance(node.get("headline"), str) and node["headline"].strip():
                title = node["headline"]
                break
    if not title:
        node = tree.css_first("title") or tree.css_first("h1")
        title = node.text(deep=True) if node else None
    return re.sub(r"\s+", " ", title).strip() or None if title else None
