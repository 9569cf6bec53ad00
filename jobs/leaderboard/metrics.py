"""Per-source metrics on Arrow batches: the weighted total, the unweighted mean, completeness.

The official definitions (``compute_metrics.py``): a missing dimension counts as 0 in the weighted
total and is skipped in the unweighted mean; a source with every dimension missing has no
unweighted mean.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from judge.rubric import DIMENSION_KEYS, WEIGHTED_SCALE, WEIGHTS

#: The official rank/overlap columns; kept for column parity (null unless rank data is joined).
RANK_COLUMNS = (
    "avg_ge_freq",
    "relative_se_rank",
    "normalized_reciprocal_se_rank",
    "reciprocal_se_rank",
    "percentage_ge_sources_not_in_se_sources",
    "percentage_ge_sources_in_se_sources",
)

#: ``source_metrics`` columns in the official order, then ours.
SOURCE_METRICS_COLUMNS = (
    "model_name",
    "query_id",
    "query_type",
    "agg_source_id",
    "source_url",
    "text_content_length",
    "unweighted_mean_score",
    "weighted_total_content_score",
    "score_complete",
    *DIMENSION_KEYS,
    *RANK_COLUMNS,
    "language",
)


#: Arrow schema of ``source_metrics.parquet`` (columns as in :data:`SOURCE_METRICS_COLUMNS`).
SOURCE_METRICS_SCHEMA = pa.schema(
    [
        pa.field("model_name", pa.string()),
        pa.field("query_id", pa.string()),
        pa.field("query_type", pa.string()),
        pa.field("agg_source_id", pa.string()),
        pa.field("source_url", pa.string()),
        pa.field("text_content_length", pa.float64()),
        pa.field("unweighted_mean_score", pa.float64()),
        pa.field("weighted_total_content_score", pa.float64()),
        pa.field("score_complete", pa.bool_()),
        *[pa.field(key, pa.float64()) for key in (*DIMENSION_KEYS, *RANK_COLUMNS)],
        pa.field("language", pa.string()),
    ],
    metadata={"schema": "source_metrics", "version": "1"},
)
assert tuple(SOURCE_METRICS_SCHEMA.names) == SOURCE_METRICS_COLUMNS


def score_matrix(batch: pa.Table | pa.RecordBatch) -> np.ndarray:
    """The 8 dimension columns as a float64 matrix (rows x 8) with NaN for missing scores."""
    return np.column_stack(
        [batch.column(key).to_numpy(zero_copy_only=False).astype(np.float64) for key in DIMENSION_KEYS]
    )


def add_source_metrics(batch: pa.Table | pa.RecordBatch) -> pa.Table:
    """Add ``unweighted_mean_score``, ``weighted_total_content_score`` and ``score_complete``.

    Input columns follow ``jobs.schemas.SOURCE_SCORES_SCHEMA``; the output columns follow
    :data:`SOURCE_METRICS_COLUMNS`.
    """
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    scores = score_matrix(table)
    present = ~np.isnan(scores)
    n_present = present.sum(axis=1)
    weights = np.array([WEIGHTS[key] for key in DIMENSION_KEYS], dtype=np.float64)
    # Same operation order as the official script: sum of (score or 0) * weight, then x 100/95.
    weighted = np.zeros(len(scores))
    for j in range(scores.shape[1]):
        weighted = weighted + np.where(present[:, j], scores[:, j], 0.0) * weights[j]
    weighted = weighted * WEIGHTED_SCALE
    total = np.zeros(len(scores))
    for j in range(scores.shape[1]):
        total = total + np.where(present[:, j], scores[:, j], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        unweighted = total / n_present
    columns = {
        "unweighted_mean_score": pa.array(unweighted, mask=n_present == 0),
        "weighted_total_content_score": pa.array(weighted),
        "score_complete": pa.array(n_present == len(DIMENSION_KEYS)),
    }
    # NaN in the input is a missing score too.
    columns.update({key: pa.array(scores[:, j], mask=~present[:, j]) for j, key in enumerate(DIMENSION_KEYS)})
    out = {}
    for name in SOURCE_METRICS_COLUMNS:
        if name in columns:
            out[name] = columns[name]
        elif name in table.column_names:
            out[name] = table.column(name)
        else:
            out[name] = pa.nulls(table.num_rows, pa.float64())
    return pa.table(out)


def included_mask(table: pa.Table, policy: str) -> pa.Array:
    """Which sources enter the aggregates: all (``official``) or complete ones only (``complete``)."""
    if policy == "official":
        return pa.array(np.ones(table.num_rows, dtype=bool))
    return pc.fill_null(table.column("score_complete"), False)
