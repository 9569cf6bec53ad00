"""The judge's plan, bucket by bucket: the same units whatever the number of buckets, aliases that
span buckets merged, conflicting texts refused by record, requests read from files batch by batch."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler.base import InputError
from crawler.storage import RunStore
from judge.pairs import judge_pairs
from judge.plan import NO_PAGE_UNIT, PlanBuilder, RequestSource
from judge.run import page_index

_COLUMNS = ("url_key", "url", "status", "final_url", "content_sha256")


def _page(key: str, status: str = "ok", final: str | None = None, sha: str | None = None) -> dict:
    return dict(
        zip(_COLUMNS, (key, f"https://site.example/{key}", status, final, sha or f"h-{key}"), strict=True)
    )


def _run(tmp_path: Path, parts: list[list[dict]]) -> RunStore:
    store = RunStore(str(tmp_path / "run"))
    for n, rows in enumerate(parts):
        store.write_table(f"pages/shard-{n:05d}-00000.parquet", pa.Table.from_pylist(rows))
    return store


def _requests(*rows: tuple[str, str, str]) -> pa.Table:
    return pa.Table.from_pylist([{"url_key": u, "query_id": q, "query_text": t} for u, q, t in rows])


def _plan(store: RunStore, requests: pa.Table, bucket_rows: int) -> dict[str, list[dict]]:
    parts = store.listdir("pages", suffix=".parquet")
    units = PlanBuilder(store, RequestSource.of_table(requests), parts, bucket_rows).units()
    return {u.unit: [u.part, *u.pairs.to_pylist()] for u in units}


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[RunStore, pa.Table]:
    """60 pages in 4 parts; k007 and k052 (different parts) are one page, k013 timed out; 200
    requests with repeats, and some for pages the run does not have."""
    pages = [_page(f"k{i:03d}") for i in range(60)]
    pages[7] = _page("k007", final="https://site.example/moved", sha="same")
    pages[52] = _page("k052", final="https://site.example/moved", sha="same")
    pages[13] = _page("k013", status="timeout", sha="")
    store = _run(tmp_path, [pages[i : i + 15] for i in range(0, 60, 15)])
    rows = [(f"k{(i * 7) % 64:03d}", f"q{i % 5}", f"question {i % 5}") for i in range(200)]
    rows += [("k052", "q9", "question 9"), ("k007", "q9", "question 9"), ("k052", "q8", "question 8")]
    return store, _requests(*rows)


def test_many_buckets_plan_the_same_units_as_one(corpus):
    store, requests = corpus
    one = _plan(store, requests, bucket_rows=10_000)
    many = _plan(store, requests, bucket_rows=7)  # about 30 buckets
    assert one == many
    assert sorted(one) == [NO_PAGE_UNIT, *(f"shard-0000{n}-00000" for n in range(4))]
    assert one[NO_PAGE_UNIT][0] is None and {r["url_key"] for r in one[NO_PAGE_UNIT][1:]} == {
        "k060",
        "k061",
        "k062",
        "k063",
    }
    # the same pairs as the rule on the whole run, each in the part that holds its page
    planned = sorted((r["url_key"], r["query_id"]) for rows in one.values() for r in rows[1:])
    whole = judge_pairs(requests, page_index(store))
    assert planned == sorted(zip(whole["url_key"].to_pylist(), whole["query_id"].to_pylist(), strict=True))


def test_an_alias_in_another_part_is_judged_once_under_the_smallest_key(corpus):
    store, requests = corpus
    plan = _plan(store, requests, bucket_rows=7)
    q9 = [(unit, r["url_key"]) for unit, rows in plan.items() for r in rows[1:] if r["query_id"] == "q9"]
    assert q9 == [("shard-00000-00000", "k007")]  # k052 (part 3) asked too: merged into k007's pair
    q8 = [(unit, r["url_key"]) for unit, rows in plan.items() for r in rows[1:] if r["query_id"] == "q8"]
    assert q8 == [("shard-00003-00000", "k052")]  # only k052 asked q8


def test_a_pair_asked_with_two_texts_is_refused_naming_both_records(corpus):
    store, requests = corpus
    clash = pa.concat_tables([requests, _requests(("k000", "q0", "another question"))])
    with pytest.raises(InputError) as err:
        _plan(store, clash, bucket_rows=7)
    assert f"line {clash.num_rows}, field 'query_text'" in str(err.value)
    assert "another query_text than at record 1" in str(err.value)  # the rows of a table count from 1


def test_request_files_are_read_whole_and_errors_name_the_line(tmp_path, corpus):
    store, requests = corpus
    path = tmp_path / "requests.parquet"
    pq.write_table(requests, path, row_group_size=16)
    source = RequestSource.of_file(str(path))
    assert source.num_rows == requests.num_rows
    assert source.read_all().equals(requests)
    csv = tmp_path / "requests.csv"
    csv.write_text("url_key,query_id,query_text\nk001,q1,one\nk002,,two\n")
    with pytest.raises(InputError, match=r"requests.csv, line 3, field 'query_id': must not be null"):
        list(RequestSource.of_file(str(csv)).batches())
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not parquet")
    with pytest.raises(InputError, match="bad.parquet.*cannot read requests"):
        RequestSource.of_file(str(tmp_path / "bad.parquet"))
