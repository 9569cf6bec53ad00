"""What a person cannot see: hidden elements found statically on the parsed tree and removed from it.

One pass over the already parsed selectolax tree, before any text, metadata or signal is taken
from it. Hidden means, decided statically (a render uses the browser's computed style instead,
see ``crawler.fetch.render``):

- ``display:none``, ``visibility:hidden`` or ``opacity:0`` in an inline style or in a top-level rule
  of the page's own ``<style>`` (rules under ``@media`` and rules with pseudo-classes are not
  applied: whether they hold depends on the viewport or on the reader's actions);
- the ``hidden`` attribute, ``aria-hidden="true"``, ``<noscript>`` and ``<template>``;
- a font size of at most 2px (0.2em/rem, 20 %); children that set their own size stay visible
  (``font-size:0`` on a parent is a common way to remove gaps between inline blocks);
- off-screen positioning (``left``/``top``/``text-indent``/``translate`` of -500px or further);
- clipping to nothing (``clip: rect(0...)``, ``clip-path: inset(50%)``, or a 1px/0 box with
  ``overflow:hidden``: the screen-reader-only pattern);
- text coloured like its background, both stated in the page (inline, or in one rule that sets both).

Long ``title`` attributes (tooltips) are recorded as hidden text too; they are not page text anyway.

An element holding nearly all of the page's text is never removed: a page hidden as a whole is revealed
by its scripts (anti-flicker snippets), which only a render can tell.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import math
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.phrases import Phrases

#: Kinds of hiding, as recorded in the page signals (``hidden_kinds``).
HIDDEN_KINDS = (
    "display_none",
    "visibility_hidden",
    "transparent",
    "hidden_attribute",
    "aria_hidden",
    "noscript",
    "tiny_font",
    "off_screen",
    "clipped",
    "same_colour",
    "title_attribute",
)
#: A ``title`` attribute (a tooltip) longer than this is text no reader sees unless hovering: recorded.
_TITLE_CHARS = 120

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
#: The look-behind starts a name only where a run of letters starts (a name ends where the run does, so
#: no match is lost): without it, a long run of letters (a base64 image in a style) took quadratic time.
_DECLARATION = re.compile(r"(?<![a-z-])([a-z-]+)\s*:\s*([^;]+)")
_LENGTH = re.compile(r"^(-?\d*\.?\d+)\s*(px|pt|em|rem|%|vw|vh)?$")
_TRANSLATE = re.compile(r"translate(?:x|y|3d)?\(\s*(-\d+(?:\.\d+)?)(px|%|vw|em)")
_FONT_SHORTHAND_SIZE = re.compile(r"(?:^|\s)(-?\d*\.?\d+(?:px|pt|em|rem|%))(?:/|\s)")
_NAMED_COLOURS = {
    "white": (255, 255, 255), "black": (0, 0, 0), "red": (255, 0, 0), "green": (0, 128, 0),
    "blue": (0, 0, 255), "yellow": (255, 255, 0), "gray": (128, 128, 128), "grey": (128, 128, 128),
    "silver": (192, 192, 192), "navy": (0, 0, 128), "whitesmoke": (245, 245, 245),
    "snow": (255, 250, 250), "ivory": (255, 255, 240),
}  # fmt: skip
_HEX = re.compile(r"#([0-9a-f]{3}|[0-9a-f]{6})\b")
_RGB = re.compile(r"rgba?\(\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)(?:[\s,/]+([\d.]+%?))?")
#: Elements never shown (their content is inert markup).
_HIDING_TAGS = ("noscript", "template")
_SKIPPED_TAGS = frozenset({"html", "head", "body", "script", "style", "meta", "link", "title"})
#: An element holding more than this share of the page's text is the page itself, hidden until a script
#: reveals it (Vue's ``v-cloak``, anti-flicker snippets): only a render can tell, so it is kept.
_WHOLE_PAGE = 0.8
#: Colours closer than this (sum of channel differences) read as the same to a person.
_SAME_COLOUR = 30


@dataclass
class HiddenFragment:
    """One removed element: why it was hidden and the text it held."""

    kind: str
    text: str
    chrome: bool
    """Inside navigation, a dialog, a cookie notice or a screen-reader label: hidden for a reason."""


@dataclass
class HiddenText:
    """What the visibility pass removed from a page."""

    fragments: list[HiddenFragment] = field(default_factory=list)
    removed: bool = False
    """Whether text was removed from the tree (then the page must be serialised again)."""

    @property
    def chars(self) -> int:
        return sum(len(f.text) for f in self.fragments)

    def kinds(self) -> list[str]:
        """Kinds that hid some text, in ``HIDDEN_KINDS`` order."""
        found = {f.kind for f in self.fragments if f.text.strip()}
        return [kind for kind in HIDDEN_KINDS if kind in found]

    def text(self, include_chrome: bool = False) -> str:
        """The hidden text, one fragment a line (only content-like fragments unless asked)."""
        return "\n".join(
            f.text for f in self.fragments if f.text.strip() and (include_chrome or not f.chrome)
        )


def _declarations(style: str) -> dict[str, str]:
    return {name: value.strip().lower() for name, value in _DECLARATION.findall(style.lower())}


def _length(value: str) -> tuple[float, str] | None:
    match = _LENGTH.match(value.replace("!important", "").strip())
    if not match:
        return None
    return float(match.group(1)), match.group(2) or "px"


def _tiny_font(value: str | None) -> bool | None:
    """True for a near-zero font size, False for a stated visible size, None when no size is stated."""
    if value is None:
        return None
    size = _length(value)
    if size is None:
        return False
    number, unit = size
    limit = {"px": 2.0, "pt": 1.5, "em": 0.2, "rem": 0.2, "%": 20.0, "vw": 0.15, "vh": 0.15}[unit]
    return number <= limit


def _resets_size(value: str | None) -> bool:
    """Whether a font size makes text visible again inside a near-zero parent: a visible size in an
    absolute unit or a keyword ("em", "%", "inherit" and "smaller" scale the parent's zero)."""
    if value is None or _tiny_font(value):
        return False
    size = _length(value)
    if size is None:
        return value.replace("!important", "").strip() not in ("inherit", "unset", "smaller", "larger")
    return size[1] not in ("em", "%")


def _font_size(decl: dict[str, str]) -> str | None:
    if "font-size" in decl:
        return decl["font-size"]
    shorthand = _FONT_SHORTHAND_SIZE.search(decl.get("font", "") + " ")
    return shorthand.group(1) if shorthand else None


def _far_negative(value: str | None) -> bool:
    size = _length(value) if value else None
    return bool(
        size and size[0] <= (-500 if size[1] in ("px", "pt") else -50 if size[1] in ("em", "rem") else -99)
    )


def _colour(value: str | None) -> tuple[int, int, int] | None:
    """An opaque RGB colour from a CSS value (transparent or semi-transparent: None)."""
    if not value:
        return None
    value = value.replace("!important", "").strip()
    if value in _NAMED_COLOURS:
        return _NAMED_COLOURS[value]
    if match := _HEX.search(value):
        digits = match.group(1)
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    if match := _RGB.search(value):
        alpha = match.group(4)
        if alpha and (float(alpha.rstrip("%")) / (100 if alpha.endswith("%") else 1)) < 0.9:
            return None
        return int(match.group(1)), int(match.group(2)), int(match.group(3))
    return None


def _distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> int:
    """How far apart two colours are (sum of the channel differences)."""
    return sum(abs(x - y) for x, y in zip(a, b, strict=True))


def _background(decl: dict[str, str]) -> tuple[int, int, int] | None:
    value = decl.get("background-color") or decl.get("background")
    if value and ("url(" in value or "gradient" in value):
        return None
    return _colour(value)


def hiding_kind(decl: dict[str, str]) -> str | None:
    """Why declarations hide an element (one of ``HIDDEN_KINDS``), or None. ``tiny_font`` and
    ``same_colour`` are decided elsewhere (they depend on descendants and ancestors)."""
    if decl.get("display", "").startswith("none"):
        return "display_none"
    if decl.get("visibility", "").startswith(("hidden", "collapse")):
        return "visibility_hidden"
    opacity = _length(decl["opacity"]) if "opacity" in decl else None
    if opacity and opacity[0] <= (5 if opacity[1] == "%" else 0.05):
        return "transparent"
    positioned = decl.get("position", "").startswith(("absolute", "fixed"))
    if (
        positioned and any(_far_negative(decl.get(side)) for side in ("left", "top", "right"))
    ) or _far_negative(decl.get("text-indent")):
        return "off_screen"
    translate = _TRANSLATE.search(decl.get("transform", ""))
    if translate and float(translate.group(1)) <= (-500 if translate.group(2) == "px" else -99):
        return "off_screen"
    clip = decl.get("clip", "") + decl.get("clip-path", "")
    if (positioned and re.search(r"rect\(\s*0|inset\(\s*(?:50|100)%", clip)) or (
        decl.get("overflow", "").startswith("hidden")
        and any(
            (_length(decl.get(side, "")) or (9.0, ""))[0] <= 1 for side in ("height", "width", "max-height")
        )
    ):
        return "clipped"
    return None


# Stylesheets are scanned with str.find for a keyword, then a short pattern matched where it is found
# (``crawler.phrases``): many times faster than a regex search over a megabyte of inline CSS (some pages
# carry that much).
#: The declaration starts that may hide an element (each hit is then read with its rule).
_HIDING_KEYWORDS = Phrases(
    (
        r"display\s*:\s*none",
        r"visibility\s*:\s*(?:hidden|collapse)",
        r"opacity\s*:\s*0*(?:\.0\d*)?\s*(?:[;}!]|$)",
        r"font-size\s*:\s*(?:0+(?:\.\d*)?[a-z%]*|[0-2](?:\.\d+)?(?:px|pt)|1?\d(?:\.\d+)?%)\s*(?:[;}!]|$)",
        "clip",
        r"overflow\s*:\s*hidden",
        r"translate[xyz3d]*\(\s*-\d{3,}",
        r":-\d{3,}",
        r": -\d{3,}",
    )
)
_SIZE_KEYWORDS = Phrases([r"font-size\s*:"])
_BACKGROUND_KEYWORDS = Phrases([r"background(?:-color)?\s*:"])
#: A ``color`` declaration (what ``_declarations`` reads as the name "color": no letter or "-" before it).
_COLOUR_DECLARATION = re.compile(r"(?<![a-z-])color\s*:")


def _rules_at(
    css: str, low: str, keywords: Phrases, needs: re.Pattern[str] | None = None
) -> Iterator[tuple[list[str], dict[str, str]]]:
    """(static selectors, declarations) of each top-level rule holding a hit of ``keywords`` in the
    lower-cased CSS ``low``; rules inside at-rule blocks (``@media``, ``@supports``) are skipped, and
    so are rules whose lower-cased body ``needs`` does not match (read before their declarations)."""
    depth = 0
    scanned = 0
    last_body = -1
    for at in sorted(keywords.positions(low)):
        body_start = css.rfind("{", 0, at)
        if body_start < 0 or body_start == last_body:
            continue
        last_body = body_start
        depth += css.count("{", scanned, body_start + 1) - css.count("}", scanned, body_start + 1)
        scanned = body_start + 1
        body_end = css.find("}", at)
        if depth != 1 or (0 <= css.find("{", body_start + 1, body_end if body_end >= 0 else len(css))):
            continue
        body = css[body_start + 1 : body_end if body_end >= 0 else len(css)]
        if needs and not needs.search(body.lower()):
            continue
        selector_start = max(css.rfind("}", 0, body_start), css.rfind(";", 0, body_start)) + 1
        selectors = _static_selectors(css[selector_start:body_start])
        if selectors:
            yield selectors, _declarations(body)


def _static_selectors(selector_list: str) -> list[str]:
    """Selectors that hold without user action: no pseudo-classes or pseudo-elements, no no-js hooks."""
    selector_list = _COMMENT.sub("", selector_list) if "/*" in selector_list else selector_list
    if "@" in selector_list:
        return []
    return [s.strip() for s in selector_list.split(",") if s.strip() and ":" not in s and "no-js" not in s]


def _readable(text: str) -> tuple[str, str]:
    """A stylesheet without its comments, and lower-cased (the same offsets in both)."""
    css = _COMMENT.sub("", text) if "/*" in text else text
    low = css.lower()
    if len(low) != len(css):  # a character whose lower case is longer ("İ"): offsets differ
        low = css
    return css, low


@dataclass
class _Sheet:
    """What the top-level rules of one stylesheet say about visibility."""

    hiding: dict[str, list[str]] = field(default_factory=dict)  # kind -> selectors
    tiny: list[str] = field(default_factory=list)  # selectors that set a near-zero font size
    coloured: dict[str, dict[str, str]] = field(default_factory=dict)
    """Selector -> its declarations, for rules that set a colour and the same background."""
    sized: list[str] | None = None
    """Selectors of the rules that set a visible font size; read only when a page has tiny text."""

    @classmethod
    def read(cls, text: str) -> _Sheet:
        """The rules of a ``<style>`` element's text."""
        css, low = _readable(text)
        sheet = cls()
        for selectors, decl in _rules_at(css, low, _HIDING_KEYWORDS):
            kind = hiding_kind(decl)
            if kind:
                sheet.hiding.setdefault(kind, []).extend(selectors)
            if _tiny_font(_font_size(decl)):
                sheet.tiny.extend(selectors)
        for selectors, decl in _rules_at(css, low, _BACKGROUND_KEYWORDS, _COLOUR_DECLARATION):
            colour, background = _colour(decl.get("color")), _background(decl)
            if colour and background and _distance(colour, background) < _SAME_COLOUR:
                sheet.coloured.update(dict.fromkeys(selectors, decl))
        return sheet

    def read_sized(self, text: str) -> list[str]:
        """``sized``, read from the sheet's text the first time it is needed."""
        if self.sized is None:
            css, low = _readable(text)
            self.sized = [
                selector
                for selectors, decl in _rules_at(css, low, _SIZE_KEYWORDS)
                if _resets_size(_font_size(decl))
                for selector in selectors
            ]
        return self.sized


class _SheetCache:
    """The sheets read lately, by a digest of their text: the pages of one site carry the same inline
    stylesheets (a news site's framework CSS: 30 ms a page to read on cnn.com), and a shard crawls one
    host's pages in one process. The digest, not the text, is kept (such a sheet is a megabyte)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._sheets: collections.OrderedDict[bytes, _Sheet] = collections.OrderedDict()
        self._lock = threading.Lock()  # ``extract_page`` may be called from threads

    def get(self, text: str) -> _Sheet:
        """The rules of a ``<style>`` element's text, read unless a page had the same text lately."""
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            sheet = self._sheets.get(key)
            if sheet is not None:
                self._sheets.move_to_end(key)
                return sheet
        sheet = _Sheet.read(text)
        with self._lock:
            self._sheets[key] = sheet
            while len(self._sheets) > self.size:
                self._sheets.popitem(last=False)
        return sheet


#: Sheets kept: a site's few inline stylesheets, for the hosts a process crawls in turn.
_SHEETS = _SheetCache(256)


@dataclass
class _Styles:
    """The rules of the page's ``<style>`` elements that bear on visibility, in document order."""

    sheets: list[tuple[str, _Sheet]] = field(default_factory=list)  # (a <style> element's text, its rules)
    hiding: dict[str, list[str]] = field(default_factory=dict)  # kind -> selectors
    tiny: list[str] = field(default_factory=list)
    coloured: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def read(cls, tree: LexborHTMLParser) -> _Styles:
        styles = cls()
        for node in tree.css("style"):
            text = node.text(deep=True)
            sheet = _SHEETS.get(text)
            styles.sheets.append((text, sheet))
            for kind, selectors in sheet.hiding.items():
                styles.hiding.setdefault(kind, []).extend(selectors)
            styles.tiny.extend(sheet.tiny)
            styles.coloured.update(sheet.coloured)
        return styles

    def sized(self) -> list[str]:
        """Selectors of the rules that set a visible font size."""
        return [selector for text, sheet in self.sheets for selector in sheet.read_sized(text)]


def _query(tree: LexborHTMLParser, selectors: list[str]) -> list[LexborNode]:
    """Nodes matching any of the selectors: one query for all, one each if the list does not parse."""
    if not selectors:
        return []
    try:
        return tree.css(", ".join(selectors))
    except Exception:  # a selector lexbor does not support
        return _one_by_one(tree, selectors)


def _one_by_one(tree: LexborHTMLParser, selectors: list[str]) -> list[LexborNode]:
    found = []
    for selector in selectors:
        try:
            found.extend(tree.css(selector))
        except Exception:
            continue
    return found


def _parses(selectors: list[str]) -> bool:
    """Whether lexbor parses the selector list (tried on an empty document: no tree to walk)."""
    try:
        _EMPTY.css(", ".join(selectors))
    except Exception:
        return False
    return True


_EMPTY = LexborHTMLParser("")
#: A selector of tags, classes, ids and combinators only (ASCII, no escapes): its needs can be read.
_PLAIN_SELECTOR = re.compile(r"[\w.#*>+~ \t\n\r\f-]+", re.ASCII)
_NAMES = re.compile(r"[.#][\w-]+", re.ASCII)
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
#: Selector lists longer than this are first cut down to the selectors that can match on the page.
_MANY_SELECTORS = 30


@functools.lru_cache(maxsize=1 << 16)
def _needed_names(selector: str) -> tuple[str, ...] | None:
    """The lower-cased classes and ids a selector needs on the page (None: it cannot be read). Cached:
    the pages of one site share their stylesheets' selectors."""
    if not _PLAIN_SELECTOR.fullmatch(selector):
        return None
    return tuple(name.lower() for name in _NAMES.findall(selector))


class _Selection:
    """Queries of the page's stylesheet selectors on its tree.

    lexbor's time grows with the number of selectors in a list (20 ms for 600 on a page), and a
    framework's stylesheet carries hundreds of rules for classes a page does not use. A long list is
    first cut down to the selectors whose classes and ids are all on the page, lower-cased (quirks mode
    matches them regardless of case): each compound of a selector must match an element of the page
    (the subject, or an ancestor or sibling of it), so the others match nothing, and the nodes found,
    their order and their repeats (one per selector matched) are the same.
    """

    def __init__(self, tree: LexborHTMLParser) -> None:
        self.tree = tree

    @functools.cached_property
    def names(self) -> set[str]:
        """The page's classes (``.name``) and ids (``#name``), lower-cased, read on first use."""
        names: set[str] = set()
        for node in self.tree.css("[class], [id]"):
            attrs = node.attributes
            names.update("." + name for name in _HTML_SPACE.split((attrs.get("class") or "").lower()) if name)
            if ident := attrs.get("id"):
                names.add("#" + ident.lower())
        return names

    def _may_match(self, selector: str) -> bool:
        needed = _needed_names(selector)
        return needed is None or all(name in self.names for name in needed)

    def select(self, selectors: list[str]) -> list[LexborNode]:
        """Nodes matching any of the selectors (each list queried at once, see ``_query``)."""
        unique = list(dict.fromkeys(selectors))
        if len(unique) <= _MANY_SELECTORS:
            return _query(self.tree, unique)
        kept: list[str] = []
        dropped: list[str] = []
        for selector in unique:
            (kept if self._may_match(selector) else dropped).append(selector)
        if dropped and not _parses(dropped):  # the whole list is queried one by one: so are those kept
            return _one_by_one(self.tree, kept)
        return _query(self.tree, kept)


_CHROME_TAGS = frozenset(
    {"nav", "header", "footer", "dialog", "menu", "aside", "button", "label", "select", "svg"}
)
_CHROME_WORDS = re.compile(
    r"nav|menu|drop|cookie|consent|gdpr|modal|dialog|popup|sr-only|screen-reader|visually-hidden|"
    r"assistive|a11y|skip|offcanvas|off-canvas|mobile|search|share|social|tooltip|toggle|icon|"
    r"login|signin|sign-in|subscribe|newsletter|cart|accordion|tab",
    re.I,
)


#: How far up the tree (the element, then its ancestors) a chrome-like element is looked for.
_CHROME_DEPTH = 12


def _chrome_like(node: LexborNode) -> bool:
    """Whether an element is itself chrome by its tag, role or class/id."""
    if node.tag in _CHROME_TAGS:
        return True
    attrs = node.attributes
    if attrs.get("role") in ("navigation", "menu", "dialog", "alertdialog", "tooltip", "tablist"):
        return True
    return bool(_CHROME_WORDS.search(f"{attrs.get('class') or ''} {attrs.get('id') or ''}"))


class _Chrome:
    """Whether hidden elements are the kind of thing pages hide for good reasons (menus, dialogs,
    screen-reader labels, cookie notices): by their own or an ancestor's tag, role or class/id, up to
    ``_CHROME_DEPTH`` elements up and below ``<body>``. The distance from each element met to the
    nearest chrome-like one is remembered: hidden elements are often siblings, with the same ancestors."""

    def __init__(self) -> None:
        self._distance: dict[int, float] = {}

    def __call__(self, node: LexborNode) -> bool:
        climbed: list[LexborNode] = []
        current: LexborNode | None = node
        while current is not None and current.mem_id not in self._distance:
            if current.tag in ("body", "html"):
                self._distance[current.mem_id] = math.inf
            elif _chrome_like(current):
                self._distance[current.mem_id] = 0
            else:
                climbed.append(current)
                current = current.parent
        distance = self._distance[current.mem_id] if current is not None else math.inf
        for below in reversed(climbed):
            distance += 1
            self._distance[below.mem_id] = distance
        return self._distance.get(node.mem_id, math.inf) < _CHROME_DEPTH


_NON_TEXT = frozenset({"script", "style", "template", "svg"})


def _texts_of(node: LexborNode) -> str:
    """The text an element would show, scripts and styles left out (a ``<noscript>``'s content is raw
    markup to the parser: it is parsed on its own)."""
    if node.tag == "-text":
        return (node.text_content or "").strip()
    if node.tag == "noscript":
        inner = LexborHTMLParser(node.text(deep=True))
        for skipped in inner.css("script, style"):
            skipped.decompose()
        return re.sub(r"\s+", " ", inner.body.text(deep=True, separator=" ") if inner.body else "").strip()
    if node.css_first("script, style, template, svg") is None:
        return re.sub(r"\s+", " ", node.text(deep=True, separator=" ")).strip()
    parts = []
    for child in node.traverse(include_text=True):
        if child.tag == "-text" and child.parent is not None and child.parent.tag not in _NON_TEXT:
            parts.append(child.text_content or "")
    return re.sub(r"\s+", " ", " ".join(parts)).strip()


class _Removal:
    """Hidden elements collected first, then removed outermost-first (text counted once)."""

    def __init__(self) -> None:
        self.kind: dict[int, str] = {}
        self.nodes: dict[int, LexborNode] = {}

    def add(self, node: LexborNode, kind: str) -> None:
        if node.tag in _SKIPPED_TAGS:
            return
        self.nodes.setdefault(node.mem_id, node)
        self.kind.setdefault(node.mem_id, kind)

    def outermost(self) -> Iterator[tuple[LexborNode, str]]:
        ids = self.nodes.keys()
        for mem_id, node in self.nodes.items():
            parent = node.parent
            covered = False
            while parent is not None:
                if parent.mem_id in ids:
                    covered = True
                    break
                parent = parent.parent
            if not covered:
                yield node, self.kind[mem_id]


def _tiny_font_nodes(
    selection: _Selection,
    styles: _Styles,
    styled: list[tuple[LexborNode, dict[str, str]]],
    removal: _Removal,
) -> None:
    """Elements whose text renders at a near-zero size; descendants that set their own size stay."""
    tiny = [node for node, decl in styled if _tiny_font(_font_size(decl))]
    tiny += selection.select(styles.tiny)
    if not tiny:
        return
    sized = {n.mem_id for n in selection.select(styles.sized())}
    sized |= {node.mem_id for node, decl in styled if _resets_size(_font_size(decl))}
    tiny_ids = {n.mem_id for n in tiny}

    def hide(node: LexborNode) -> None:
        has_sized = any(
            d.mem_id in sized and d.mem_id not in tiny_ids
            for d in node.traverse(include_text=False)
            if d is not node
        )
        if not has_sized:
            removal.add(node, "tiny_font")
            return
        for child in node.iter(include_text=True):
            if child.tag == "-text":
                if child.text_content and child.text_content.strip():
                    removal.add(child, "tiny_font")
            elif child.mem_id not in sized:
                hide(child)

    for node in tiny:
        if node.mem_id not in sized or node.mem_id in tiny_ids:
            hide(node)


def _same_colour_nodes(
    selection: _Selection,
    styles: _Styles,
    styled: list[tuple[LexborNode, dict[str, str]]],
    removal: _Removal,
) -> None:
    """Elements whose text colour matches the nearest background, both stated in the page: in inline
    styles, or in one rule that sets both. Backgrounds set by other rules or by external stylesheets
    are out of sight, so an element without a stated background up the tree is left alone."""
    declared: dict[int, dict[str, str]] = {}
    candidates: dict[int, LexborNode] = {}
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for selector, decl in styles.coloured.items():
        groups.setdefault(tuple(sorted(decl.items())), []).append(selector)
    for decl_items, selectors in groups.items():
        for node in selection.select(selectors):
            declared.setdefault(node.mem_id, {}).update(decl_items)
            candidates[node.mem_id] = node
    for node, decl in styled:
        if "color" in decl or "background" in decl or "background-color" in decl:
            declared.setdefault(node.mem_id, {}).update(decl)
            candidates[node.mem_id] = node
    for mem_id, node in candidates.items():
        colour = _colour(declared[mem_id].get("color"))
        if colour is None:
            continue
        current: LexborNode | None = node
        background = None
        while current is not None:
            stated = declared.get(current.mem_id)
            if stated and ("background" in stated or "background-color" in stated):
                background = _background(stated)  # None: an image, a gradient or a translucent colour
                break
            current = current.parent
        if background is not None and _distance(colour, background) < _SAME_COLOUR:
            removal.add(node, "same_colour")


#: Attribute a render sets on each element the browser does not show (value: one of HIDDEN_KINDS).
RENDER_MARK = "data-sourcebench-hidden"

#: Run in the rendered page before its snapshot: marks what the browser's computed style and layout
#: hide (external stylesheets and script-set styles included), which ``remove_hidden`` then removes.
MARK_HIDDEN_SCRIPT = """() => {
  const mark = "__MARK__";
  const rgb = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).map(Number); return p.length > 3 && p[3] < 0.9 ? null : p.slice(0, 3); };
  const background = (el) => { for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e); if (s.backgroundImage !== "none") return null;
      const c = rgb(s.backgroundColor); if (c) return c; } return [255, 255, 255]; };
  const ownText = (el) => Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
  const skip = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE"]);
  let n = 0;
  for (const el of document.body ? document.body.querySelectorAll("*") : []) {
    if (++n > 20000) break;
    if (skip.has(el.tagName) || el.closest("[" + mark + "]")) continue;
    const s = getComputedStyle(el);
    let kind = null;
    if (s.display === "none") kind = "display_none";
    else if (s.visibility === "hidden" || s.visibility === "collapse") kind = "visibility_hidden";
    else if (parseFloat(s.opacity) <= 0.05) kind = "transparent";
    else {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.right <= 0 || r.bottom <= 0)) kind = "off_screen";
      else if (r.width <= 1 && r.height <= 1 && s.overflow === "hidden" && el.textContent.trim()) {
        kind = "clipped";
      }
      else if (ownText(el)) {
        const c = rgb(s.color), b = c && background(el);
        if (parseFloat(s.fontSize) <= 2) {  // its own text only: children may set a size of their own
          for (const t of Array.from(el.childNodes).filter((t) => t.nodeType === 3 && t.textContent.trim())) {
            const wrap = document.createElement("span"); wrap.setAttribute(mark, "tiny_font");
            t.replaceWith(wrap); wrap.appendChild(t);
          }
        } else if (b && Math.abs(c[0] - b[0]) + Math.abs(c[1] - b[1]) + Math.abs(c[2] - b[2]) < __SAME__) {
          kind = "same_colour";
        }
      }
    }
    if (kind) el.setAttribute(mark, kind);
  }
}""".replace("__MARK__", RENDER_MARK).replace("__SAME__", str(_SAME_COLOUR))


def distinct_nodes(tree: LexborHTMLParser, selectors: str) -> Iterator[LexborNode]:
    """The nodes matching a selector list, each once, in document order. One query walks the tree once
    (each query takes about as long as a walk, 0.1 ms on a page); lexbor returns a node once for each
    selector it matches."""
    seen: set[int] = set()
    for node in tree.css(selectors):
        if node.mem_id not in seen:
            seen.add(node.mem_id)
            yield node


@dataclass
class _Cued:
    """The elements that carry a visibility cue, with their attributes, found in one walk of the tree
    (instead of four), each list in document order."""

    marked: list[tuple[LexborNode, dict[str, str | None]]] = field(default_factory=list)
    hidden: list[tuple[LexborNode, dict[str, str | None]]] = field(default_factory=list)
    """``hidden`` or ``aria-hidden="true"`` attributes, ``<noscript>`` and ``<template>``."""
    styled: list[tuple[LexborNode, dict[str, str | None]]] = field(default_factory=list)
    titled: list[tuple[LexborNode, dict[str, str | None]]] = field(default_factory=list)

    @classmethod
    def find(cls, tree: LexborHTMLParser) -> _Cued:
        cued = cls()
        query = f"[{RENDER_MARK}], [hidden], [aria-hidden=true], noscript, template, [style], [title]"
        for node in distinct_nodes(tree, query):
            attrs = node.attributes
            if RENDER_MARK in attrs:
                cued.marked.append((node, attrs))
            if "hidden" in attrs or attrs.get("aria-hidden") == "true" or node.tag in _HIDING_TAGS:
                cued.hidden.append((node, attrs))
            if "style" in attrs:
                cued.styled.append((node, attrs))
            if "title" in attrs:
                cued.titled.append((node, attrs))
        return cued


def remove_hidden(tree: LexborHTMLParser) -> HiddenText:
    """Remove every element a person cannot see from ``tree`` (in place) and say what they held."""
    removal = _Removal()
    cued = _Cued.find(tree)
    for node, attrs in cued.marked:  # a render's verdict (MARK_HIDDEN_SCRIPT)
        kind = attrs.get(RENDER_MARK) or ""
        removal.add(node, kind if kind in HIDDEN_KINDS else "display_none")
    for node, attrs in cued.hidden:
        tag = node.tag
        kind = "noscript" if tag in _HIDING_TAGS else (
            "hidden_attribute" if "hidden" in attrs else "aria_hidden"
        )  # fmt: skip
        removal.add(node, kind)
    styled = [(node, _declarations(attrs.get("style") or "")) for node, attrs in cued.styled]
    for node, decl in styled:
        if style_kind := hiding_kind(decl):
            removal.add(node, style_kind)
    styles = _Styles.read(tree)
    selection = _Selection(tree)
    for kind, selectors in styles.hiding.items():
        for node in selection.select(selectors):
            removal.add(node, kind)
    _tiny_font_nodes(selection, styles, styled, removal)
    _same_colour_nodes(selection, styles, styled, removal)
    hidden = HiddenText()
    is_chrome = _Chrome()
    for node, attrs in cued.titled:
        title = attrs.get("title") or ""
        if len(title) > _TITLE_CHARS and node.tag not in _SKIPPED_TAGS:
            hidden.fragments.append(HiddenFragment("title_attribute", title.strip(), is_chrome(node)))
    if not removal.nodes:
        return hidden
    total: int | None = None
    for node, kind in list(removal.outermost()):
        text = _texts_of(node)
        if len(text) > 500 and total is None:  # the page's length, needed only for long hidden texts
            total = len(tree.body.text(deep=True)) if tree.body is not None else 0
        if total and len(text) > total * _WHOLE_PAGE:
            continue  # revealed by scripts (anti-flicker), or a page hidden as a whole: not decidable here
        if text:
            # aria-hidden text is still seen by sighted readers: removed as the issue asks, never a deceit
            hidden.fragments.append(HiddenFragment(kind, text, kind == "aria_hidden" or is_chrome(node)))
            hidden.removed = True
        node.decompose()
    return hidden
