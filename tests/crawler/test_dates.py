"""crawler.dates: htmldate's original-date search, first on the page's head data, gives find_date's result."""

from __future__ import annotations

import gzip

import htmldate
import pytest
from selectolax.lexbor import LexborHTMLParser

from crawler.dates import original_date
from crawler.decoding import decode_body

FIXED_URL = "https://example.com/page"  # no date in it: the head data and the full search decide


def _pages(shared_data):
    """HTML of the shared pages of every set."""
    pages = []
    for name in ("aeb", "htmldate", "trafilatura"):
        for path in sorted((shared_data / "pages" / name / "html").glob("*.gz")):
            pages.append(decode_body(gzip.decompress(path.read_bytes()), "text/html"))
    for folder in sorted((shared_data / "pages" / "readability").iterdir()):
        if (folder / "source.html").exists():
            pages.append(decode_body((folder / "source.html").read_bytes(), "text/html"))
    return pages


@pytest.mark.slow
def test_same_dates_as_find_date_on_the_shared_pages(shared_data):
    pages = _pages(shared_data)
    assert len(pages) > 400
    differ = [
        (number, expected)
        for number, html in enumerate(pages)
        if original_date(html, FIXED_URL, LexborHTMLParser(html))
        != (expected := htmldate.find_date(html, url=FIXED_URL, original_date=True, extensive_search=True))
    ]
    assert differ == []


@pytest.mark.parametrize(
    ("html", "url", "expected"),
    [  # fmt: skip
        # the URL decides before anything else, as in find_date
        (
            "<html><head><meta name='date' content='2021-03-04'></head></html>",
            "https://x.org/2020/01/02/a",
            "2020-01-02",
        ),
        # a <meta> tag, a JSON-LD script, an <abbr>, a date only in the body text
        (
            "<html><head><meta property='article:published_time' content='2021-03-04T10:00'></head></html>",
            FIXED_URL,
            "2021-03-04",
        ),
        (
            '<html><script type="application/ld+json">{"datePublished": "2019-05-06"}</script></html>',
            FIXED_URL,
            "2019-05-06",
        ),
        (
            "<html><body><abbr class='published' title='2018-07-08'>July</abbr></body></html>",
            FIXED_URL,
            "2018-07-08",
        ),
        (
            "<html><body><article><p>Posted on 2017-09-10 by Jane</p></article></body></html>",
            FIXED_URL,
            "2017-09-10",
        ),
        # not HTML at the start: find_date's own checks decide
        ("just text", FIXED_URL, None),
    ],
)
def test_each_step(html, url, expected):
    assert original_date(html, url, LexborHTMLParser(html)) == expected
    assert htmldate.find_date(html, url=url, original_date=True, extensive_search=True) == expected
