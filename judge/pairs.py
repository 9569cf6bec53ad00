"""Which (page, query) pairs get judged: the one rule that the audit, ``judge``, ``--rescore`` and
``costbench`` all apply.

1. One request per (url_key, query_id): a repeated pair keeps its first query text.
2. Cited URLs that reach the same page (same final URL and content: an old spelling that redirects, a
   mirror path) are one page, judged once per query under the smallest of their url_keys; every
   alias takes that judgment (:func:`page_ids`).
3. A pair whose page was not fetched (no record, or a status other than ``ok``) stays a request: the
   judge writes it an explicit ``skipped`` row, never a score.

Everything here works on a few short columns (never the page text), with Arrow group-bys.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.compute as pc

#: Page columns the rule needs (cheap to read: no text).
ALIAS_COLUMNS = ("url_key", "url", "status", "final_url", "content_sha256")
PAGE_IDS_SCHEMA = pa.schema([pa.field("url_key", pa.string()), pa.field("page_id", pa.string())])
PAIR_COLUMNS = ("url_key", "query_id", "query_text", "page_id")


def page_ids(pages: pa.Table) -> pa.Table:
    """``url_key -> page_id`` for fetched pages: cited URLs that reach the same page share a page id.

    The id hashes the final URL and the content hash, so it does not depend on which aliases have
    been crawled so far. Pages not fetched (status other than ``ok``) have no row.
    """
    ok = pages.filter(pc.equal(pages["status"], "ok"))
    page = pc.coalesce(ok["final_url"], ok["url"]).to_pylist()
    content = pc.coalesce(ok["content_sha256"], ok["url_key"]).to_pylist()
    ids = [hashlib.sha1(f"{p}\n{c}".encode()).hexdigest()[:20] for p, c in zip(page, content, strict=True)]
    return pa.table({"url_key": ok["url_key"], "page_id": pa.array(ids, pa.string())}, schema=PAGE_IDS_SCHEMA)


def judge_pairs(requests: pa.Table, pages: pa.Table) -> pa.Table:
    """The (page, query) pairs to judge, by the rule of this module.

    Args:
        requests: ``url_key, query_id, query_text`` (strings, no nulls), e.g. selected sources joined
            with their queries, or a user's requests file.
        pages: At least :data:`ALIAS_COLUMNS` of the run's page records (all of them, or the pages a
            streaming pass takes).

    Returns:
        ``url_key, query_id, query_text, page_id`` sorted by url_key and query_id; ``page_id`` is null
        for pairs whose page was not fetched.
    """
    requests = requests.select(["url_key", "query_id", "query_text"]).append_column(
        "_row", pa.array(range(requests.num_rows), pa.int64())
    )
    first = requests.group_by(["url_key", "query_id"], use_threads=False).aggregate([("_row", "min")])
    requests = requests.take(first["_row_min"]).drop_columns(["_row"])
    requests = requests.join(page_ids(pages), "url_key", join_type="left outer")
    fetched = requests.filter(pc.is_valid(requests["page_id"]))
    merged = fetched.group_by(["page_id", "query_id"], use_threads=False).aggregate(
        [("url_key", "min"), ("query_text", "first")]
    )
    merged = merged.rename_columns(["page_id", "query_id", "url_key", "query_text"])
    unfetched = requests.filter(pc.is_null(requests["page_id"]))
    pairs = pa.concat_tables([t.select(list(PAIR_COLUMNS)).cast(_PAIRS_SCHEMA) for t in (merged, unfetched)])
    return pairs.sort_by([("url_key", "ascending"), ("query_id", "ascending")])


_PAIRS_SCHEMA = pa.schema([(c, pa.string()) for c in PAIR_COLUMNS])


def pair_ids(pairs: pa.Table) -> list[tuple[str, str]]:
    """The (page_id, query_id) of each judged pair (pairs without a page are left out)."""
    fetched = pairs.filter(pc.is_valid(pairs["page_id"]))
    return list(zip(fetched["page_id"].to_pylist(), fetched["query_id"].to_pylist(), strict=True))
