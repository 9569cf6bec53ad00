"""Judgments to content vectors: one row per (page, query) with the eight scores and justifications.

Columnar throughout (Arrow sorts, group-bys and joins, no Python loop over rows), so memory follows
the few columns read, not Python objects per judgment.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from judge.rubric import DIMENSIONS, STAGES
from judge.schema import CONTENT_VECTORS_SCHEMA

#: Judgment columns the vectors need (``raw_output`` and the accounting stay on disk).
VECTOR_COLUMNS = ("url_key", "query_id", "stage", "status", "scores", "judged_at")
#: When stages disagree, the vector's status is the first of these that any stage has.
_STATUS_PRECEDENCE = ("skipped", "error", "unscorable")
_PAIR = ["url_key", "query_id"]


def _latest(judgments: pa.Table) -> pa.Table:
    """The newest row (``judged_at``; the later row on a tie) of each (url_key, query_id, stage)."""
    table = judgments.select(list(VECTOR_COLUMNS))
    table = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    order = table.sort_by([("judged_at", "ascending"), ("_row", "ascending")])
    order = order.set_column(order.schema.get_field_index("_row"), "_row", pa.array(range(order.num_rows)))
    last = order.group_by([*_PAIR, "stage"], use_threads=False).aggregate([("_row", "max")])
    return order.take(last["_row_max"])


def _dimension(latest: pa.Table, stage: str, key: str) -> pa.Table:
    """``url_key, query_id, <key>, <key>_justification`` from the scored rows of one stage."""
    rows = latest.filter(pc.and_(pc.equal(latest["stage"], stage), pc.equal(latest["status"], "scored")))
    entries = pc.list_flatten(rows["scores"])
    parents = pc.list_parent_indices(rows["scores"])
    named = pc.equal(pc.struct_field(entries, "dimension"), key)
    hit = pc.and_(named, pc.is_valid(pc.struct_field(entries, "score")))
    entries, parents = entries.filter(hit), parents.filter(hit)
    table = pa.table(
        {
            "url_key": rows["url_key"].take(parents),
            "query_id": rows["query_id"].take(parents),
            key: pc.cast(pc.struct_field(entries, "score"), pa.float64()),
            f"{key}_justification": pc.struct_field(entries, "justification"),
        }
    )
    # A stage answer holds each dimension once; were it repeated, the last entry wins.
    return (
        table.group_by(_PAIR, use_threads=False)
        .aggregate([(key, "last"), (f"{key}_justification", "last")])
        .rename_columns([*_PAIR, key, f"{key}_justification"])
    )


def content_vectors(judgments: pa.Table) -> pa.Table:
    """Pivot judgments (JUDGMENT_SCHEMA, or at least :data:`VECTOR_COLUMNS`) to CONTENT_VECTORS_SCHEMA.

    The newest row (``judged_at``) of each (url_key, query_id, stage) wins, so a rescore replaces the
    stages it recomputed. Scores are float64, null where a stage is not scored. ``judge_status`` is
    ``scored`` when all three stages are scored, ``partial`` when some stage has no row yet, else
    the first of skipped / error / unscorable that a stage has.
    """
    latest = _latest(judgments)
    vectors = latest.group_by(_PAIR, use_threads=False).aggregate([])
    for stage in STAGES:
        rows = latest.filter(pc.equal(latest["stage"], stage))
        status = rows.select([*_PAIR, "status"]).rename_columns([*_PAIR, f"_status_{stage}"])
        vectors = vectors.join(status, _PAIR, join_type="left outer")
    for dim in DIMENSIONS:
        vectors = vectors.join(_dimension(latest, dim.stage, dim.key), _PAIR, join_type="left outer")
    statuses = [vectors[f"_status_{stage}"] for stage in STAGES]

    def any_is(value: str) -> pa.ChunkedArray:
        hits = [pc.fill_null(pc.equal(s, value), False) for s in statuses]
        return pc.or_(pc.or_(hits[0], hits[1]), hits[2])

    all_scored = pc.and_(pc.and_(*(pc.fill_null(pc.equal(s, "scored"), False) for s in statuses[:2])),
                         pc.fill_null(pc.equal(statuses[2], "scored"), False))  # fmt: skip
    status = pa.array(["partial"] * vectors.num_rows, pa.string())
    for value in reversed(_STATUS_PRECEDENCE):
        status = pc.if_else(any_is(value), value, status)
    status = pc.if_else(all_scored, "scored", status)
    vectors = vectors.append_column("judge_status", status)
    vectors = vectors.sort_by([("url_key", "ascending"), ("query_id", "ascending")])
    return vectors.select(CONTENT_VECTORS_SCHEMA.names).cast(CONTENT_VECTORS_SCHEMA)
