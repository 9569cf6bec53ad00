"""Bootstrap confidence intervals for the overall leaderboard, from the reduce's per-query sums.

Resamples queries (paired across systems, seeded) exactly as ``jobs.analysis.system_intervals`` does
on one row per source, but from the (system, query) partial sums the streaming reduce already holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from jobs.analysis import percentile_interval, replicate_means, tied_with
from jobs.leaderboard.aggregate import LeaderboardAccumulator

if TYPE_CHECKING:
    from jobs.leaderboard.config import ReduceConfig

INTERVAL_SCORES = {"weighted_total_content_score": "weighted", "unweighted_mean_score": "unweighted"}


def per_query_matrices(
    accumulator: LeaderboardAccumulator, column: str
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``systems`` and ``(n_queries, n_systems)`` sums and counts of one score column."""
    groups = accumulator.by["queries"].groups
    systems = sorted({str(key[0]) for key in groups})
    queries = sorted({str(key[1]) for key in groups})
    s_index = {name: i for i, name in enumerate(systems)}
    q_index = {name: i for i, name in enumerate(queries)}
    sums = np.zeros((len(queries), len(systems)))
    counts = np.zeros((len(queries), len(systems)))
    for (system, query_id, _type), state in groups.items():
        sums[q_index[str(query_id)], s_index[str(system)]] += state.sums[column]
        counts[q_index[str(query_id)], s_index[str(system)]] += state.counts[column]
    return systems, sums, counts


def add_intervals(
    results: dict[str, list[dict[str, Any]]], accumulator: LeaderboardAccumulator, config: ReduceConfig
) -> None:
    (
        """Add ``<score>_ci_low/_ci_high`` and ``weighted_tied_with`` to each overall row, in place.

    ``weighted_tied_with`` lists the systems whose paired bootstrap difference to this one has an
    interval that includes 0 (the report prints those difference intervals).
    """
        ""
    )
    if config.bootstrap_replicates == 0 or not results["overall"]:
        return
    frame: dict[str, Any] = {}
    for column, prefix in INTERVAL_SCORES.items():
        systems, sums, counts = per_query_matrices(accumulator, column)
        reps = replicate_means(sums, counts, config.bootstrap_replicates, config.bootstrap_seed)
        low, high = percentile_interval(reps, config.confidence_level)
        frame["model_name"] = systems
        frame[f"{prefix}_ci_low"], frame[f"{prefix}_ci_high"] = low, high
        if prefix == "weighted":  # tied: the paired difference's interval includes 0
            frame["weighted_tied_with"] = tied_with(systems, reps, config.confidence_level)
    intervals = pd.DataFrame(frame)
    by_name = intervals.set_index("model_name").to_dict("index")
    for row in results["overall"]:
        values = by_name[str(row["model_name"])]
        for key, value in values.items():
            row[key] = None if isinstance(value, float) and np.isnan(value) else value
