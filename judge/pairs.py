"""Which (page, query) pairs get judged: the one rule that the audit, ``judge``, ``--rescore`` and
``costbench`` all apply.

1. One request per (url_key, query_id): a repeated pair keeps its first query text.
2. Cited URLs that reach the same page (same final URL and content: an old spelling that redirects, a
   mirror path) are one page, judged once per query under the smallest of their url_keys (with that
   url_key's query text); every alias takes that judgment (:func:`page_ids`).
3. A pair whose page was not fetched (no record, or a status other than ``ok``) stays a request: the
   judge writes it an explicit ``skipped`` row, never a score.

Everything here works on a few short columns (never the page text), with sorts and Arrow joins.
The rule is local to a page (its url_keys and their requests), so :mod:`judge.plan` applies it
bucket by bucket, with all the url_keys of a page in one bucket.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

#: Page columns the rule needs (cheap to read: no text).
ALIAS_COLUMNS = ("url_key", "url", "status", "final_url", "content_sha256")
PAGE_IDS_SCHEMA = pa.schema([pa.field("url_key", pa.string()), pa.field("page_id", pa.string())])
PAIR_COLUMNS = ("url_key", "query_id", "query_text", "page_id")
#: Pages hashed per batch by :func:`page_ids` (bounds the Python strings alive at once).
_HASH_BATCH = 32_768
_PAIR_KEYS = ("url_key", "query_id")


def page_ids(pages: pa.Table) -> pa.Table:
    """``url_key -> page_id`` for fetched pages: cited URLs that reach the same page share a page id.

    The id hashes the final URL and the content hash, so it does not depend on which aliases have
    been crawled so far. Pages not fetched (status other than ``ok``) have no row.
    """
    ok = pages.filter(pc.equal(pages["status"], "ok"))
    page = pc.coalesce(ok["final_url"], ok["url"])
    content = pc.coalesce(ok["content_sha256"], ok["url_key"])
    ids = []
    for start in range(0, ok.num_rows, _HASH_BATCH):  # Python strings for one batch at a time
        batch = zip(
            page.slice(start, _HASH_BATCH).to_pylist(),
            content.slice(start, _HASH_BATCH).to_pylist(),
            strict=True,
        )
        ids.append(
            pa.array([hashlib.sha1(f"{p}\n{c}".encode()).hexdigest()[:20] for p, c in batch], pa.string())
        )
    return pa.table(
        {"url_key": ok["url_key"], "page_id": pa.chunked_array(ids, pa.string())}, schema=PAGE_IDS_SCHEMA
    )


def aliased_pages(ids: pa.Table) -> pa.Array:
    """The page ids that several url_keys reach (from :func:`page_ids` rows)."""
    ordered, repeats = sorted_repeats(ids.select(["page_id"]), ("page_id",))
    return pc.unique(ordered["page_id"].filter(repeats)).cast(pa.string())


def judge_pairs(requests: pa.Table, pages: pa.Table, ids: pa.Table | None = None) -> pa.Table:
    """The (page, query) pairs to judge, by the rule of this module.

    Args:
        requests: ``url_key, query_id, query_text`` (strings, no nulls), e.g. selected sources joined
            with their queries, or a user's requests file. Other columns are carried through (for an
            alias, those of the request chosen).
        pages: At least :data:`ALIAS_COLUMNS` of the run's page records (all of them, or the pages a
            streaming pass takes).
        ids: :func:`page_ids` of ``pages``, when the caller has them already (the plan hashes each
            page once); None computes them.

    Returns:
        ``url_key, query_id, query_text, page_id`` (then the carried columns) sorted by url_key and
        query_id; ``page_id`` is null for pairs whose page was not fetched.
    """
    requests = first_per_pair(requests)
    ids = page_ids(pages) if ids is None else ids
    requests = requests.join(ids, "url_key", join_type="left outer")
    requests = requests.select([*PAIR_COLUMNS, *(c for c in requests.column_names if c not in PAIR_COLUMNS)])
    # Only pages reached from several url_keys (aliases, few) need their pairs merged: the merge
    # runs on those pairs, not on all of them.
    is_alias = pc.fill_null(pc.is_in(requests["page_id"], value_set=aliased_pages(ids)), False)
    merged = merge_aliases(requests.filter(is_alias))
    single = requests.filter(pc.invert(is_alias))  # fetched pages of one url_key, and unfetched pairs
    pairs = pa.concat_tables([merged, single])
    return pairs.sort_by([(key, "ascending") for key in _PAIR_KEYS])


def merge_aliases(pairs: pa.Table) -> pa.Table:
    """One row per (page_id, query_id): the row of the smallest url_key."""
    ordered, repeats = sorted_repeats(pairs, ("page_id", "query_id"), then=("url_key",))
    return ordered.filter(pc.invert(repeats))


def sorted_repeats(
    table: pa.Table, keys: Sequence[str], then: Sequence[str] = ()
) -> tuple[pa.Table, pa.Array]:
    """``table`` stably sorted by ``keys`` (then by ``then``), and for each row whether it repeats
    the ``keys`` of the row before it.

    A sort and a comparison of neighbours: a fraction of the memory of a hash group-by on string
    keys, which is what bounds the driver's plan.
    """
    order = pc.sort_indices(table, sort_keys=[(key, "ascending") for key in (*keys, *then)])
    ordered = table.take(order).combine_chunks()
    del order
    if ordered.num_rows < 2:
        return ordered, pa.array([False] * ordered.num_rows, pa.bool_())
    head, tail = ordered.slice(0, ordered.num_rows - 1), ordered.slice(1)
    same = functools.reduce(pc.and_, (pc.equal(head[key], tail[key]) for key in keys))
    return ordered, pa.concat_arrays([pa.array([False]), pc.fill_null(same, False).combine_chunks()])


def first_per_pair(requests: pa.Table) -> pa.Table:
    """The first row of each (url_key, query_id), sorted by pair."""
    ordered, repeats = sorted_repeats(requests, _PAIR_KEYS)
    return ordered.filter(pc.invert(repeats))


def pair_ids(pairs: pa.Table) -> list[tuple[str, str]]:
    """The (page_id, query_id) of each judged pair (pairs without a page are left out)."""
    fetched = pairs.filter(pc.is_valid(pairs["page_id"]))
    return list(zip(fetched["page_id"].to_pylist(), fetched["query_id"].to_pylist(), strict=True))
