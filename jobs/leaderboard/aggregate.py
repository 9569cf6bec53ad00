"""Streaming group aggregation of per-source metrics into leaderboard rows.

Each batch of source metrics is reduced with Arrow's ``group_by`` to partial sums and non-null
counts per group where the batch is (in a Ray worker); the driver combines the partials in a
dictionary whose size is the number of groups (systems x query types x queries), not the number of
sources. Means are then sum / count over the
non-missing values, as the official ``mean()`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from jobs.leaderboard.metrics import RANK_COLUMNS
from judge.rubric import DIMENSION_KEYS

#: Columns averaged over the sources of a group, in the official output order.
MEAN_COLUMNS = ("unweighted_mean_score", "weighted_total_content_score", *DIMENSION_KEYS, *RANK_COLUMNS)

#: The three official groupings.
GROUPINGS: dict[str, tuple[str, ...]] = {
    "overall": ("model_name",),
    "by_query_type": ("model_name", "query_type"),
    "queries": ("model_name", "query_id", "query_type"),
}


@dataclass
class GroupState:
    """Running totals of one group."""

    first_seq: int
    num_sources: int = 0
    num_complete: int = 0
    query_ids: set[str] = field(default_factory=set)
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(MEAN_COLUMNS, 0.0))
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEAN_COLUMNS, 0))


class GroupAccumulator:
    """Accumulates one grouping (e.g. by system) over a stream of source-metric batches."""

    def __init__(self, keys: tuple[str, ...]):
        self.keys = keys
        self.groups: dict[tuple[Any, ...], GroupState] = {}

    def partial(self, table: pa.Table, seq: pa.Array) -> pa.Table:
        """One batch reduced to per-group partial sums (run where the batch is, e.g. a Ray worker).

        ``seq`` gives each row's position in the batch; :meth:`merge` shifts it to the input.
        """
        work = table.select([*dict.fromkeys((*self.keys, "query_id", "score_complete", *MEAN_COLUMNS))])
        work = work.append_column("_seq", seq).append_column(
            "_complete", pc.cast(pc.fill_null(work["score_complete"], False), pa.int64())
        )
        aggregations = [("_seq", "min"), ("_seq", "count"), ("_complete", "sum"), ("query_id", "distinct")]
        for name in MEAN_COLUMNS:
            aggregations += [(name, "sum"), (name, "count")]
        return work.group_by(list(self.keys), use_threads=False).aggregate(aggregations)

    def merge(self, partial: pa.Table, offset: int) -> None:
        """Fold a :meth:`partial` in; ``offset`` is the position of the batch's first row in the input."""
        for row in partial.to_pylist():
            key = tuple(row[k] for k in self.keys)
            first_seq = offset + row["_seq_min"]
            state = self.groups.get(key)
            if state is None:
                state = self.groups[key] = GroupState(first_seq=first_seq)
            state.first_seq = min(state.first_seq, first_seq)
            state.num_sources += row["_seq_count"]
            state.num_complete += row["_complete_sum"] or 0
            state.query_ids.update(row["query_id_distinct"])
            for name in MEAN_COLUMNS:
                if row[f"{name}_count"]:
                    state.sums[name] += row[f"{name}_sum"]
                    state.counts[name] += row[f"{name}_count"]

    def rows(self, include_query_count: bool, include_complete: bool) -> list[dict[str, Any]]:
        """Finished rows, sorted as the official script sorts (weighted score down, then name)."""
        out = []
        for key, state in self.groups.items():
            row: dict[str, Any] = dict(zip(self.keys, key, strict=True))
            row["num_sources"] = state.num_sources
            if include_query_count:
                row["num_queries"] = len(state.query_ids)
            if include_complete:
                row["num_complete_scores"] = state.num_complete
            for name in MEAN_COLUMNS:
                row[name] = state.sums[name] / state.counts[name] if state.counts[name] else None
            out.append((state.first_seq, row))
        out.sort(key=lambda item: (sort_value(item[1]), str(item[1]["model_name"]), item[0]))
        return [row for _, row in out]


def sort_value(row: dict[str, Any]) -> float:
    value = row.get("weighted_total_content_score")
    return -1e18 if value is None else -float(value)


class LeaderboardAccumulator:
    """All three official groupings at once."""

    def __init__(self) -> None:
        self.by = {name: GroupAccumulator(keys) for name, keys in GROUPINGS.items()}

    def partials(self, table: pa.Table, keep: pa.Array) -> dict[str, pa.Table]:
        """Every grouping's partial sums over the ``keep`` rows of one batch (numbered from 0)."""
        seq = pa.array(range(table.num_rows), pa.int64()).filter(keep)
        kept = table.filter(keep)
        return {name: accumulator.partial(kept, seq) for name, accumulator in self.by.items()}

    def merge(self, partials: dict[str, pa.Table], offset: int) -> None:
        """Fold one batch's :meth:`partials` in; ``offset`` is the position of its first row."""
        for name, accumulator in self.by.items():
            accumulator.merge(partials[name], offset)

    def results(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "overall": self.by["overall"].rows(include_query_count=True, include_complete=True),
            "by_query_type": self.by["by_query_type"].rows(include_query_count=True, include_complete=True),
            "queries": self.by["queries"].rows(include_query_count=False, include_complete=False),
        }
