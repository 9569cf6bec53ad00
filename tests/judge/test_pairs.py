"""The one rule that decides which (page, query) pairs get judged."""

from __future__ import annotations

import pyarrow as pa

from judge.pairs import judge_pairs, page_ids, pair_ids

_COLUMNS = ("url_key", "url", "status", "final_url", "content_sha256")
PAGES = pa.Table.from_pylist([
    dict(zip(_COLUMNS, ("a", "http://x.org/old", "ok", "https://x.org/new", "h1"), strict=True)),
    dict(zip(_COLUMNS, ("b", "https://x.org/new", "ok", "https://x.org/new", "h1"), strict=True)),
    dict(zip(_COLUMNS, ("c", "https://y.org/", "ok", None, None), strict=True)),
    dict(zip(_COLUMNS, ("d", "https://z.org/", "timeout", None, None), strict=True)),
])  # fmt: skip


def _requests(*rows: tuple[str, str, str]) -> pa.Table:
    return pa.Table.from_pylist([{"url_key": u, "query_id": q, "query_text": t} for u, q, t in rows])


def test_aliases_of_one_page_are_judged_once_per_query_under_the_smallest_key():
    pairs = judge_pairs(_requests(("b", "q1", "Q1"), ("a", "q1", "Q1"), ("b", "q2", "Q2")), PAGES)
    assert pairs.select(["url_key", "query_id"]).to_pylist() == [
        {"url_key": "a", "query_id": "q1"},
        {"url_key": "b", "query_id": "q2"},
    ]
    ids = dict(zip(*page_ids(PAGES).to_pydict().values(), strict=True))
    assert ids["a"] == ids["b"] != ids["c"] and "d" not in ids
    assert pair_ids(pairs) == [(ids["a"], "q1"), (ids["b"], "q2")]


def test_a_repeated_pair_keeps_its_first_text_and_unfetched_pages_stay_requests():
    pairs = judge_pairs(
        _requests(("c", "q1", "first"), ("c", "q1", "second"), ("d", "q1", "x"), ("nope", "q1", "y")), PAGES
    )
    rows = {r["url_key"]: r for r in pairs.to_pylist()}
    assert set(rows) == {"c", "d", "nope"}
    assert rows["c"]["query_text"] == "first" and rows["c"]["page_id"]
    assert rows["d"]["page_id"] is None and rows["nope"]["page_id"] is None  # they get skipped rows
    assert pair_ids(pairs) == [(rows["c"]["page_id"], "q1")]
