"""Source selection (official top-k, canonical de-duplication) and the scores join (status rows)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from crawler.errors import InputError
from crawler.schema import PAGE_SCHEMA
from crawler.urls import url_key
from jobs.schemas import CITATIONS_SCHEMA, QUERIES_SCHEMA, SOURCE_SCORES_SCHEMA
from jobs.scoring import (
    SCORED_SOURCES_SCHEMA,
    page_ids,
    page_summaries,
    score_sources,
    select_sources,
    status_counts,
)
from judge.rubric import DIMENSION_KEYS
from judge.schema import CONTENT_VECTORS_SCHEMA

QUERIES = pa.Table.from_pylist(
    [
        {"query_id": "q1", "query": "first", "query_type": "VACOS", "language": None},
        {"query_id": "q2", "query": "second", "query_type": "HotpotQA", "language": None},
    ],
    schema=QUERIES_SCHEMA,
)


def citations(rows: list[dict]) -> pa.Table:
    full = [
        {
            "query_text": None,
            "answer_text": None,
            "language": None,
            "agg_source_id": None,
            "selected_topk": None,
            **r,
        }
        for r in rows
    ]
    return pa.Table.from_pylist(full, schema=CITATIONS_SCHEMA)


def test_top_k_by_rank_over_distinct_canonical_urls():
    rows = [
        {"system": "A", "query_id": "q1", "url": f"https://site{i}.com/p", "rank": i} for i in range(1, 8)
    ]
    # Rank 2 repeats rank 1's page in another spelling: it must not take a top-5 slot.
    rows[1]["url"] = "HTTPS://SITE1.com:443/p?utm_source=x#frag"
    selected = select_sources(citations(rows), QUERIES, top_k=5)
    assert selected.column("cited_url").to_pylist() == [
        "https://site1.com/p",
        "https://site3.com/p",
        "https://site4.com/p",
        "https://site5.com/p",
        "https://site6.com/p",
    ]
    assert selected.column("rank").to_pylist() == [1, 3, 4, 5, 6]
    assert selected.column("query_type").to_pylist() == ["VACOS"] * 5
    assert selected.column("agg_source_id").to_pylist() == selected.column("url_key").to_pylist()


def test_official_selected_topk_flag_wins_over_rank():
    rows = [
        {
            "system": "A",
            "query_id": "q2",
            "url": f"https://s{i}.org/",
            "rank": i,
            "selected_topk": i in (2, 4),
            "agg_source_id": f"src{i}",
        }
        for i in range(1, 7)
    ]
    rows += [{"system": "B", "query_id": "q2", "url": f"https://s{i}.org/", "rank": i} for i in (1, 2, 3)]
    selected = select_sources(citations(rows), QUERIES, top_k=1).to_pylist()  # B: no flags, its top 1
    assert [(r["system"], r["agg_source_id"]) for r in selected] == [
        ("A", "src2"),
        ("A", "src4"),
        ("B", url_key("https://s1.org/")),
    ]


def test_top_k_none_keeps_all():
    rows = [{"system": "A", "query_id": "q1", "url": f"https://s{i}.org/", "rank": i} for i in range(1, 9)]
    assert select_sources(citations(rows), QUERIES, top_k=None).num_rows == 8


def test_unknown_query_is_an_input_error():
    rows = [{"system": "A", "query_id": "nope", "url": "https://a.org/", "rank": 1}]
    with pytest.raises(InputError) as err:
        select_sources(citations(rows), QUERIES, top_k=5, source="cites.jsonl")
    assert "cites.jsonl" in str(err.value) and "query_id" in str(err.value) and "nope" in str(err.value)


def page(url: str, status: str, text: str | None) -> dict:
    return {
        "url_key": url_key(url),
        "url": url,
        "status": status,
        "text_full": text,
        "text_main": text,
        "language": "en" if text else None,
        "error": None if status == "ok" else f"{status} reason",
    }


def vector(url: str, query_id: str, status: str, score: float | None) -> dict:
    row = {"url_key": url_key(url), "query_id": query_id, "judge_status": status}
    row.update({key: score for key in DIMENSION_KEYS})
    return row


def test_scores_keep_failed_pages_and_judgments_as_status_rows():
    urls = [
        "https://ok.com/",
        "https://gone.com/",
        "https://junk.com/",
        "https://never.com/",
        "https://lost.com/",
    ]
    rows = [{"system": "A", "query_id": "q1", "url": u, "rank": i} for i, u in enumerate(urls, 1)]
    rows.append({"system": "B", "query_id": "q1", "url": "https://ok.com/", "rank": 1})
    selected = select_sources(citations(rows), QUERIES, top_k=5)
    pages = pa.Table.from_pylist(
        [
            page(urls[0], "ok", "x" * 400),
            page(urls[1], "http_error", None),
            page(urls[2], "ok", "junk text"),
            page(urls[4], "ok", "lost"),
        ],
        schema=PAGE_SCHEMA,
    )
    vectors = pa.Table.from_pylist(
        [vector(urls[0], "q1", "scored", 4.0), vector(urls[2], "q1", "unscorable", None)],
        schema=CONTENT_VECTORS_SCHEMA,
    )
    scores = score_sources(selected, page_summaries(pages), vectors)
    assert scores.schema.equals(SCORED_SOURCES_SCHEMA, check_metadata=False)
    assert scores.schema.names[: len(SOURCE_SCORES_SCHEMA)] == SOURCE_SCORES_SCHEMA.names
    by = {(r["model_name"], r["source_url"]): r for r in scores.to_pylist()}
    assert len(by) == 6
    good = by[("A", "https://ok.com/")]
    assert [good[k] for k in DIMENSION_KEYS] == [4.0] * 8 and good["text_content_length"] == 400
    assert (good["page_status"], good["judge_status"]) == ("ok", "scored")
    assert by[("B", "https://ok.com/")]["semantic_relevance"] == 4.0
    for url, page_status, judge_status in [
        ("https://gone.com/", "http_error", None),
        ("https://junk.com/", "ok", "unscorable"),
        ("https://never.com/", "missing", None),
        ("https://lost.com/", "ok", "missing"),
    ]:
        row = by[("A", url)]
        assert (row["page_status"], row["judge_status"]) == (page_status, judge_status), url
        assert all(row[k] is None for k in DIMENSION_KEYS), url
    assert by[("A", "https://gone.com/")]["page_error"] == "http_error reason"
    counts = status_counts(scores)
    assert counts["page_status"] == {"http_error": 1, "missing": 1, "ok": 4}
    assert counts["judge_status"] == {"missing": 1, "not_judged": 2, "scored": 2, "unscorable": 1}


def test_language_is_the_answers_then_the_querys_then_the_pages():
    queries = pa.Table.from_pylist(
        [{"query_id": "q1", "query": "eins", "query_type": "VACOS", "language": "de"},
         {"query_id": "q2", "query": "two", "query_type": "VACOS", "language": None}],
        schema=QUERIES_SCHEMA,
    )  # fmt: skip
    rows = [
        {"system": "A", "query_id": "q1", "url": "https://a.org/", "rank": 1, "language": "fr"},
        {"system": "B", "query_id": "q1", "url": "https://a.org/", "rank": 1},
        {"system": "C", "query_id": "q2", "url": "https://a.org/", "rank": 1},
    ]
    selected = select_sources(citations(rows), queries, top_k=5)
    pages = pa.Table.from_pylist([page("https://a.org/", "ok", "text")], schema=PAGE_SCHEMA)
    vectors = pa.Table.from_pylist([], schema=CONTENT_VECTORS_SCHEMA)
    scores = score_sources(selected, page_summaries(pages), vectors).to_pylist()
    assert {r["model_name"]: r["language"] for r in scores} == {"A": "fr", "B": "de", "C": "en"}


def test_cited_urls_that_reach_the_same_page_share_one_judgment():
    old, new, copy = "http://example.com/story", "https://www.example.com/story", "https://mirror.org/story"
    rows = [
        {"system": s, "query_id": "q1", "url": u, "rank": 1} for s, u in (("A", old), ("B", new), ("C", copy))
    ]
    selected = select_sources(citations(rows), QUERIES, top_k=5)
    records = [page(u, "ok", "same text") for u in (old, new, copy)]
    for record in records:
        record["content_sha256"] = "c0ffee"
    records[0]["final_url"] = records[1]["final_url"] = new  # the old spelling redirects
    pages = pa.Table.from_pylist(records, schema=PAGE_SCHEMA)
    ids = dict(zip(*page_ids(pages).to_pydict().values(), strict=True))
    assert ids[url_key(old)] == ids[url_key(new)]
    assert ids[url_key(copy)] != ids[url_key(new)]  # same text at another address is another page
    vectors = pa.Table.from_pylist(
        [vector(old, "q1", "scored", 3.0), vector(copy, "q1", "scored", 2.0)],
        schema=CONTENT_VECTORS_SCHEMA,
    )  # fmt: skip
    scores = {
        r["model_name"]: r["semantic_relevance"]
        for r in score_sources(selected, page_summaries(pages), vectors).to_pylist()
    }
    assert scores == {"A": 3.0, "B": 3.0, "C": 2.0}
