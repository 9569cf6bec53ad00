"""Extraction: accuracy on the shared real pages (goals from issue 3) and the non-HTML paths."""

from __future__ import annotations

import collections
import functools
import gzip
import json
import re
import statistics
from pathlib import Path

import htmldate
import pytest

from crawler.decoding import decode_body
from crawler.extract import extract_page
from crawler.metadata import normalise_date
from crawler.schema import SIGNALS_TYPE
from tests.crawler.loopweb import article, tiny_pdf


def _tokens(text):
    return collections.Counter(re.findall(r"\w+", (text or "").lower()))


def token_f1(predicted, truth):
    ours, gold = _tokens(predicted), _tokens(truth)
    common = sum((ours & gold).values())
    if not common:
        return 0.0
    precision, recall = common / sum(ours.values()), common / sum(gold.values())
    return 2 * precision * recall / (precision + recall)


@functools.cache
def _extracted(folder: Path) -> list[tuple[dict, dict]]:
    """(ground truth item, our record) for every page of one shared page set, extracted once."""
    truth = json.loads((folder / "ground_truth.json").read_text())
    pairs = []
    for name, item in truth.items():
        path = folder / "html" / (name if name.endswith(".gz") else f"{name}.html.gz")
        if not path.exists():
            path = folder / "html" / f"{name}.gz"
        pairs.append((item, extract_page(item["url"], gzip.decompress(path.read_bytes()), "text/html")))
    return pairs


def test_main_text_f1_on_aeb(shared_data):
    scores = [
        token_f1(record["text_main"], item["articleBody"])
        for item, record in _extracted(shared_data / "pages/aeb")
    ]
    assert statistics.median(scores) >= 0.95  # trafilatura alone 0.99, resiliparse alone 0.947


def test_publication_date_on_htmldate_pages(shared_data):
    folder = shared_data / "pages/htmldate"
    pairs = _extracted(folder)
    hits = sum(record["published_date"] == item["date"] for item, record in pairs)
    truth = json.loads((folder / "ground_truth.json").read_text())
    alone = 0
    for name, item in truth.items():
        html = gzip.decompress(
            (folder / "html" / (name if name.endswith(".gz") else f"{name}.gz")).read_bytes()
        )
        found = htmldate.find_date(decode_body(html, "text/html"), url=item["url"], original_date=True)
        alone += normalise_date(found) == item["date"]
    # Goal 0.90 and at least htmldate alone on the same pages (0.883 here; 0.903 on 824 held-out pages).
    assert hits / len(pairs) >= 0.90 and hits >= alone


def test_few_real_pages_are_flagged_for_manipulation(shared_data):
    """At most 1 % of the real shared pages, unmodified, get a manipulation flag (3 of 348 measured:
    a hidden staff list with credentials, a repeated noscript keyword, a news ticker)."""
    records = [
        record
        for name in ("aeb", "htmldate", "trafilatura")
        for _, record in _extracted(shared_data / "pages" / name)
    ]
    flagged = [record["manipulation"] for record in records if record["manipulation"]]
    assert len(flagged) <= 0.01 * len(records), flagged


def _norm(name):
    return re.sub(r"\s+", " ", name).strip().casefold()


def test_author_found_on_trafilatura_pages(shared_data):
    found = total = 0
    for item, record in _extracted(shared_data / "pages/trafilatura"):
        gold = item.get("author")
        if not gold:
            continue
        gold_names = [_norm(g) for g in (gold if isinstance(gold, list) else [gold])]
        ours = [_norm(a) for a in record["authors"]]
        total += 1
        found += any(g in o or o in g for g in gold_names for o in ours if o)
    assert found / total >= 0.70  # trafilatura alone 0.55


def _squash(text):
    return re.sub(r"\s+", " ", text or "").strip()


def test_main_and_full_text_snippets_on_trafilatura_pages(shared_data):
    """``with`` snippets belong to the main text, ``without`` (boilerplate) ones do not; the full
    text keeps everything visible (the judge reads boilerplate cues). Measured: 0.86 / 0.86 / 0.990."""
    with_main = with_full = with_total = without_absent = without_total = 0
    for item, record in _extracted(shared_data / "pages/trafilatura"):
        main, full = _squash(record["text_main"]), _squash(record["text_full"])
        for snippet in item.get("with") or []:
            with_total += 1
            with_main += _squash(snippet) in main
            with_full += _squash(snippet) in full
        for snippet in item.get("without") or []:
            without_total += 1
            without_absent += _squash(snippet) not in main
    assert with_main / with_total >= 0.8 and without_absent / without_total >= 0.8
    assert with_full / with_total >= 0.95


def test_record_fields_and_signals():
    body = article("Birds of the valley", 120).replace(
        b"<footer>", b"<a href='https://amzn.to/x'>Buy now</a><div class='cookie-banner'>ok</div><footer>"
    )
    record = extract_page("https://news.example.org/birds", body, "text/html; charset=utf-8")
    assert record["status"] == "ok"
    assert record["title"] == "Birds of the valley"
    assert record["authors"] == ["Jane Doe"]
    assert record["published_date"] == "2025-06-01"
    assert record["site_name"] == "Loop News"
    assert record["language"] == "en"
    assert (record["domain"], record["domain_category"]) == ("example.org", "org")
    assert "migrate every spring" in record["text_main"] and "Advertisement" in record["text_full"]
    signals = record["signals"]
    assert set(signals) == {field.name for field in SIGNALS_TYPE}
    assert signals["ad_label_count"] >= 1 and signals["affiliate_cta_count"] >= 1
    assert signals["popup_overlay_count"] >= 1 and signals["has_about_link"] and signals["has_contact_link"]
    assert signals["schema_org_organization"] == "Loop News" and signals["schema_org_person"] == "Jane Doe"
    assert "NewsArticle" in signals["schema_org_types"] and signals["word_count"] > 100


def test_pdf_text_and_plain_text():
    pdf = extract_page(
        "https://example.edu/paper.pdf", tiny_pdf("Hello from a PDF about river birds"), "application/pdf"
    )
    assert pdf["status"] == "ok" and "river birds" in pdf["text_main"]
    assert pdf["title"] == "Loopback PDF" and pdf["authors"] == ["Ada Lovelace"]
    assert pdf["published_date"] == "2024-03-15" and pdf["domain_category"] == "edu"
    text = extract_page(
        "https://example.com/n.txt", b"Some plain notes about birds and rivers.", "text/plain"
    )
    assert text["status"] == "ok" and text["text_full"].startswith("Some plain notes")


@pytest.mark.parametrize(
    ("body", "ctype", "status"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png", "unsupported_type"),
        (bytes(range(256)), "text/html", "unsupported_type"),
        (b"<html><body>Hi</body></html>", "text/html", "too_short"),
        (b"%PDF-1.4 broken", "application/pdf", "error"),
    ],
)
def test_non_ok_statuses(body, ctype, status):
    record = extract_page("https://example.com/x", body, ctype)
    assert record["status"] == status and record["error"]
