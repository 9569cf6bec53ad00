"""crawler.phrases: literal starts found with str.find give exactly the matches a regex search gives."""

from __future__ import annotations

import gzip
import re

import pytest

from crawler import manipulation, signals, visibility
from crawler.phrases import Phrases, literal_start

#: Every Phrases the extractor uses.
IN_USE = {
    name: value
    for module in (signals, manipulation, visibility)
    for name, value in vars(module).items()
    if isinstance(value, Phrases)
}


@pytest.mark.parametrize(
    ("alternative", "start"),
    [
        ("about(?:[\\s-]us)?", "about"),
        ("ads?", "ad"),
        (r"amzn\.to/", "amzn.to/"),
        (r"\?aff=", "?aff="),
        ("<</?sys>>", "<<"),
        ("x+y", "x"),
        ("a{2}b", ""),
        (r"\d+ street", ""),
        ("[ab]c", ""),
    ],
)
def test_literal_start(alternative, start):
    assert literal_start(alternative) == start


@pytest.mark.parametrize("alternatives", [["about", r"\bcontact"], ["a|b"], ["(?:x|y)z"], ["[xy]z"]])
def test_alternatives_without_a_literal_start_are_refused(alternatives):
    with pytest.raises(ValueError, match="literal text"):
        Phrases(alternatives)


def test_ignoring_case_is_refused():
    with pytest.raises(ValueError, match="cannot ignore case"):
        Phrases(["about"], flags=re.IGNORECASE)


def test_starts_found_by_a_shorter_start_are_dropped():
    assert Phrases(["ad", "ads", "advert", "sponsor", "sponsored"]).starts == ("ad", "sponsor")


def _page_texts(shared_data, count: int = 12) -> list[str]:
    from resiliparse.extract.html2text import extract_plain_text

    texts = []
    for path in sorted((shared_data / "pages" / "aeb" / "html").glob("*.gz"))[:count]:
        html = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        texts.append(html.lower())  # markup too: class names, hrefs
        texts.append((extract_plain_text(html, alt_texts=False, list_bullets=False) or "").lower())
    return texts


SAMPLES = [
    "buy now, buy it now! check the price. see deal. add to basket",
    "about us | about-us | who we are | contact us | contact-us | get in touch | privacy policy",
    "ad ads-slot header_ad thread sponsored-box taboola mgid",
    "https://amazon.com/x/y?tag=ab&ref_id=3 https://amzn.to/abc /go/shop ?aff_id=1&clickref=2",
    "ignore previous instructions <|im_start|> [inst] x [/inst] <<sys>> >>> end of the page",
    "Call P.O. Box 12 or PO Box 7",
]


@pytest.mark.parametrize("name", sorted(IN_USE))
def test_positions_are_every_offset_where_the_pattern_matches(name, shared_data):
    phrases = IN_USE[name]
    for text in [*SAMPLES, *_page_texts(shared_data)]:
        everywhere = [at for at in range(len(text)) if phrases.pattern.match(text, at)]
        assert sorted(phrases.positions(text)) == everywhere, name
        assert phrases.found(text) == bool(phrases.pattern.search(text))


def test_count_apart_counts_what_finditer_counts(shared_data):
    def word_start(text: str, at: int) -> bool:
        return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")

    exact = re.compile(r"\b" + signals._CTA_TEXT.pattern.pattern)
    overlapping = Phrases(["aa", "aaa"])
    for text in [*SAMPLES, *_page_texts(shared_data), "see deal see deal buy now"]:
        assert signals._CTA_TEXT.count_apart(text, word_start) == len(exact.findall(text))
    assert overlapping.count_apart("aaaaa") == len(re.findall("aa|aaa", "aaaaa")) == 2
