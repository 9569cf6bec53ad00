"""Per-batch work of the reduce, run where the batch is (a Ray worker, or a local thread).

A batch of score rows becomes one *summary* row: its source metrics (Arrow IPC, for the Parquet
twin), their CSV text, and every grouping's partial sums. The driver then only appends bytes and
merges partials whose size is the number of groups in the batch, never re-reading source rows.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from crawler.base import InputError
from jobs.inputs import official_score
from jobs.leaderboard.aggregate import GROUPINGS, LeaderboardAccumulator
from jobs.leaderboard.metrics import RANK_COLUMNS, SOURCE_METRICS_SCHEMA, add_source_metrics, included_mask
from jobs.leaderboard.ranks import KEY_COLUMNS as RANK_KEYS
from jobs.leaderboard.writers import csv_rows
from jobs.schemas import SOURCE_SCORES_SCHEMA
from judge.rubric import DIMENSION_KEYS

#: Summary columns holding a grouping's partial sums as Arrow IPC.
PARTIAL_COLUMNS = {name: f"partial_{name}" for name in GROUPINGS}


def conform_scores(
    batch: pa.Table, name: str | None, query_types: dict[str, str], source: str = "scores"
) -> pa.Table:
    """Cast one batch to SOURCE_SCORES_SCHEMA: rename the system, fill query types, coerce scores.

    Raises:
        InputError: naming ``source``, the record and the column of a score outside 1-5 or a
            negative text length.
    """
    columns = {}
    for field in SOURCE_SCORES_SCHEMA:
        column = batch.column(field.name) if field.name in batch.column_names else None
        if field.name == "model_name" and name is not None:
            column = pa.array([name] * batch.num_rows, pa.string())
        elif column is None:
            column = pa.nulls(batch.num_rows, field.type)
        elif field.type == pa.float64() and not pa.types.is_floating(column.type):
            column = pa.array([official_score(v) for v in column.to_pylist()], pa.float64())
        columns[field.name] = column.cast(field.type)
    if query_types:
        ids, types = columns["query_id"].to_pylist(), columns["query_type"].to_pylist()
        filled = [
            t if t not in (None, "", "Unknown") else query_types.get(q, "Unknown")
            for q, t in zip(ids, types, strict=True)
        ]
        columns["query_type"] = pa.array(filled, pa.string())
    table = pa.table(columns, schema=SOURCE_SCORES_SCHEMA)
    check_ranges(table, source)
    return table


def check_ranges(table: pa.Table, source: str) -> None:
    """Scores must lie on the official 1-5 scale and text lengths must not be negative."""
    limits = {key: (1.0, 5.0) for key in DIMENSION_KEYS} | {"text_content_length": (0.0, None)}
    for column, (low, high) in limits.items():
        values = table[column]
        bad = pc.less(values, low) if high is None else pc.or_(pc.less(values, low), pc.greater(values, high))
        if not pc.any(bad).as_py():
            continue
        row = pc.index(bad, True).as_py()
        query_id, url = table["query_id"][row].as_py(), table["source_url"][row].as_py()
        scale = "a negative count" if high is None else "outside the 1-5 scale"
        raise InputError(
            source,
            f"{values[row].as_py()!r} is {scale} (system {table['model_name'][row].as_py()!r}, "
            f"query_id {query_id!r}, source {url!r})",
            field=column,
        )


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(cell: pa.Scalar) -> pa.Table:
    """A table back from a summary's IPC cell, without copying its buffer."""
    return pa.ipc.open_stream(cell.as_buffer()).read_all()


def with_ranks(scores: pa.Table, batch: pa.Table, ranks: pa.Table | None) -> pa.Table:
    """Add the official rank columns: the batch's own, else looked up in ``ranks`` (else none).

    ``ranks`` (:data:`jobs.leaderboard.ranks.RANKS_SCHEMA`) is keyed by model_name, query_id and
    agg_source_id; the lookup keeps the batch's row order.
    """
    if all(column in batch.column_names for column in RANK_COLUMNS):
        for column in RANK_COLUMNS:
            values = batch.column(column)
            if not pa.types.is_floating(values.type):
                values = pa.array([official_score(v) for v in values.to_pylist()], pa.float64())
            scores = scores.append_column(column, values.cast(pa.float64()))
        return scores
    if ranks is None or ranks.num_rows == 0:
        return scores

    def keys(table: pa.Table) -> pa.Array:
        parts = [pc.fill_null(table.column(c).cast(pa.string()), "") for c in RANK_KEYS]
        return pc.binary_join_element_wise(*parts, "\x1f")

    index = pc.index_in(keys(scores), value_set=keys(ranks))
    for column in RANK_COLUMNS:
        scores = scores.append_column(column, ranks.column(column).take(index))
    return scores


def summarize_batch(
    batch: pa.Table,
    name: str | None,
    query_types: dict[str, str],
    policy: str,
    source: str = "scores",
    ranks: pa.Table | None = None,
) -> pa.Table:
    """One batch of score rows -> one summary row (see the module docstring)."""
    scores = with_ranks(conform_scores(batch, name, query_types, source), batch, ranks)
    metrics = add_source_metrics(scores).cast(SOURCE_METRICS_SCHEMA)
    partials = LeaderboardAccumulator().partials(metrics, included_mask(metrics, policy))
    columns = {
        "num_rows": pa.array([metrics.num_rows], pa.int64()),
        "metrics_ipc": pa.array([to_ipc(metrics)], pa.large_binary()),
        "csv": pa.array([csv_rows(metrics)], pa.large_binary()),
    }
    for grouping, column in PARTIAL_COLUMNS.items():
        columns[column] = pa.array([to_ipc(partials[grouping])], pa.large_binary())
    return pa.table(columns)
