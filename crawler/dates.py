"""htmldate's original-date search at a fraction of its cost: its first steps on the page's head data only.

``htmldate.find_date`` parses the whole page with lxml (about 40 % of its time) before it reads the URL, the
``<meta>`` tags, the JSON-LD and the ``<abbr>`` elements, which decide most pages (185 of the 283 shared
pages that reach it). Here those steps run on a small lxml document made of just those elements, taken
from the selectolax tree the extractor already has; only when they find nothing does the full search run
(and it repeats them, on the whole page, finding nothing again). Same result as ``find_date`` on every
shared page (``tests/crawler/test_dates.py``).

The steps are htmldate's own functions, called in ``find_date``'s order (htmldate 1.11); a version that
renames them fails the import, and the test compares the results with ``find_date``'s.
"""

from __future__ import annotations

import htmldate
from htmldate.core import examine_abbr_elements, examine_header
from htmldate.extractors import extract_url_date, json_search
from htmldate.utils import Extractor, is_dubious_html, load_html
from htmldate.validators import get_max_date, get_min_date
from selectolax.lexbor import LexborHTMLParser

#: The ``<script>`` types htmldate's JSON search reads (it compares the attribute exactly).
_JSON_TYPES = ("application/ld+json", "application/settings+json")


def _head_document(tree: LexborHTMLParser) -> str:
    """The page's ``<meta>`` tags, JSON scripts and ``<abbr>`` elements, in order, as a small page."""
    parts = ["<html><head>"]
    for node in tree.css("meta, script[type], abbr"):
        if node.tag == "script":
            if node.attributes.get("type") in _JSON_TYPES:
                text = node.text(deep=True)
                parts.append(f'<script type="{node.attributes["type"]}">{text}</script>')
        else:
            parts.append(node.html or "")
    parts.append("</head></html>")
    return "".join(parts)


def original_date(html: str, url: str, tree: LexborHTMLParser) -> str | None:
    """``htmldate.find_date(html, url=url, original_date=True, extensive_search=True)`` (``YYYY-MM-DD``),
    with ``tree`` the selectolax parse of ``html``."""
    if is_dubious_html(html[:50].lower()):  # find_date may reject the page before reading the URL
        return _full_search(html, url)
    options = Extractor(True, get_max_date(None), get_min_date(None), True, "%Y-%m-%d")
    found = extract_url_date(url, options)
    if found is None:
        head = load_html(_head_document(tree))
        if head is not None:
            found = (
                examine_header(head, options)
                or json_search(head, options)
                or examine_abbr_elements(head, options)
            )
    return found or _full_search(html, url)


def _full_search(html: str, url: str) -> str | None:
    return htmldate.find_date(html, url=url, original_date=True, extensive_search=True)
