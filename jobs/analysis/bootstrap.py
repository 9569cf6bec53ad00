"""Bootstrap confidence intervals for system scores, resampling queries (paired across systems).

A system's score is the mean over its cited sources (the official reduce). The uncertainty that
matters for a leaderboard is which *queries* were asked, so a replicate draws the query set with
replacement and every system is scored on that same draw: differences between systems are paired,
and a query drawn twice counts twice (all of its sources twice).

Vectorised: per (system, query) the sum and the count of non-missing scores are computed once;
a replicate is then a vector of query multiplicities ``c`` and a system's score is
``(c @ sums) / (c @ counts)``, so all replicates are one matrix product.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

WEIGHTED = "weighted_total_content_score"
UNWEIGHTED = "unweighted_mean_score"
PAIRWISE_COLUMNS = [
    "system_a",
    "system_b",
    "p_a_beats_b",
    "mean_diff",
    "diff_ci_low",
    "diff_ci_high",
    "tied",
]
#: Score column -> prefix of its interval columns in the leaderboard.
INTERVAL_PREFIX = {WEIGHTED: "weighted", UNWEIGHTED: "unweighted"}


def _query_multiplicities(n_queries: int, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, n_queries)`` counts of how often each query is drawn in each replicate."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_queries, size=(n_boot, n_queries))
    offsets = (np.arange(n_boot) * n_queries)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=n_boot * n_queries)
    return counts.reshape(n_boot, n_queries).astype(np.float64)


def bootstrap_replicates(
    sources: pd.DataFrame, column: str, n_boot: int = 1000, seed: int = 0
) -> tuple[list[str], np.ndarray]:
    """Replicate system means of one score column.

    Args:
        sources: One row per cited source with ``model_name``, ``query_id`` and ``column``;
            NaN scores are missing and skipped (as in the official means).
        column: The score column to average.
        n_boot: Number of bootstrap replicates.
        seed: Seed of the query draws; the same seed gives the same draws for every column,
            so weighted and unweighted intervals (and all system pairs) share replicates.

    Returns:
        The system names (sorted) and an ``(n_boot, n_systems)`` array of replicate means;
        NaN where a replicate holds no scored source of a system.
    """
    systems = sorted(sources["model_name"].astype(str).unique())
    queries = sorted(sources["query_id"].astype(str).unique())
    if not systems or n_boot < 1:
        return systems, np.empty((max(n_boot, 0), len(systems)))
    sys_idx = pd.Categorical(sources["model_name"].astype(str), categories=systems).codes
    qry_idx = pd.Categorical(sources["query_id"].astype(str), categories=queries).codes
    values = pd.to_numeric(sources[column], errors="coerce").to_numpy(dtype=np.float64)
    present = ~np.isnan(values)
    sums = np.zeros((len(queries), len(systems)))
    counts = np.zeros((len(queries), len(systems)))
    np.add.at(sums, (qry_idx[present], sys_idx[present]), values[present])
    np.add.at(counts, (qry_idx[present], sys_idx[present]), 1.0)
    return systems, replicate_means(sums, counts, n_boot, seed)


def replicate_means(sums: np.ndarray, counts: np.ndarray, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """Replicate system means from per-(query, system) sums and counts of non-missing scores.

    This is the core of :func:`bootstrap_replicates`, for callers (the streaming reduce) that
    already hold per-query aggregates instead of one row per source.

    Args:
        sums: ``(n_queries, n_systems)`` sums of the scores.
        counts: ``(n_queries, n_systems)`` numbers of non-missing scores.
        n_boot: Number of replicates.
        seed: Seed of the query draws.

    Returns:
        ``(n_boot, n_systems)`` replicate means (NaN where a replicate holds no scored source).
    """
    mult = _query_multiplicities(sums.shape[0], n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (mult @ sums) / (mult @ counts)


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise percentile interval, NaN replicates skipped (all-NaN columns give NaN)."""
    alpha = (1.0 - level) / 2.0
    if replicates.size == 0:  # no replicate, or no column (numpy's nanquantile drops the level axis)
        empty = np.full(replicates.shape[1:], np.nan)
        return empty, empty.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(replicates, [alpha, 1.0 - alpha], axis=0)
    return low, high


def system_intervals(
    sources: pd.DataFrame, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Percentile bootstrap intervals of each system's weighted and unweighted score.

    Args:
        sources: One row per cited source: ``model_name, query_id, weighted_total_content_score,
            unweighted_mean_score`` (NaN = missing, skipped in means).
        n_boot: Number of replicates.
        seed: Seed of the query draws.
        level: Coverage of the interval (0.95 -> 2.5th and 97.5th percentiles).

    Returns:
        ``model_name, weighted_ci_low, weighted_ci_high, unweighted_ci_low, unweighted_ci_high``,
        one row per system, sorted by name.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    out: dict[str, object] = {}
    for column, prefix in INTERVAL_PREFIX.items():
        systems, reps = bootstrap_replicates(sources, column, n_boot, seed)
        out["model_name"] = systems
        low, high = percentile_interval(reps, level)
        out[f"{prefix}_ci_low"], out[f"{prefix}_ci_high"] = low, high
    return pd.DataFrame(out)


def pairwise_win_probability(
    sources: pd.DataFrame,
    column: str = WEIGHTED,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """For every ordered pair of systems, the bootstrap probability that A scores above B.

    Replicates are paired (the same resampled queries for both systems); an exact tie in a
    replicate counts one half. ``tied`` is the tie flag: the percentile interval of the paired
    difference A - B at ``level`` includes 0 (or there is no data), so the leaderboard should not
    claim an order between them. Two systems' own intervals may overlap while their paired difference
    is clearly non-zero (queries that are hard for one are hard for both): the difference decides.

    Returns:
        ``system_a, system_b, p_a_beats_b, mean_diff, diff_ci_low, diff_ci_high, tied``
        (``mean_diff`` is the mean replicate difference A - B).
    """
    systems, reps = bootstrap_replicates(sources, column, n_boot, seed)
    n = len(systems)
    if n < 2:
        return pd.DataFrame(columns=PAIRWISE_COLUMNS)
    a_idx, b_idx = np.where(~np.eye(n, dtype=bool))
    diff = reps[:, a_idx] - reps[:, b_idx]  # (n_boot, pairs)
    valid = ~np.isnan(diff)
    wins = np.where(valid, (diff > 0) + 0.5 * (diff == 0), 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = wins / valid.sum(axis=0)
        mean_diff = np.nanmean(diff, axis=0)
    d_low, d_high = percentile_interval(diff, level)
    return pd.DataFrame(
        {
            "system_a": [systems[i] for i in a_idx],
            "system_b": [systems[i] for i in b_idx],
            "p_a_beats_b": p,
            "mean_diff": mean_diff,
            "diff_ci_low": d_low,
            "diff_ci_high": d_high,
            "tied": _includes_zero(d_low, d_high),
        }
    )


def _includes_zero(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether each interval includes 0; an undefined (NaN) interval separates nothing."""
    with np.errstate(invalid="ignore"):
        return ~((low > 0) | (high < 0))


def tied_with(systems: list[str], replicates: np.ndarray, level: float) -> list[str]:
    """For each system, the ``;``-joined names of the systems it is not separated from.

    Two systems are tied when the percentile interval (at ``level``) of their paired replicate
    difference includes 0: the same rule as the ``tied`` column of :func:`pairwise_win_probability`
    and the difference intervals the report prints.

    Args:
        systems: Names, in the column order of ``replicates``.
        replicates: ``(n_boot, n_systems)`` replicate means (paired: one query draw per row).
        level: Coverage of the intervals.
    """
    n = len(systems)
    if n == 0:
        return []
    a_idx, b_idx = np.where(~np.eye(n, dtype=bool))
    low, high = percentile_interval(replicates[:, a_idx] - replicates[:, b_idx], level)
    tied = np.zeros((n, n), dtype=bool)
    tied[a_idx, b_idx] = _includes_zero(low, high)
    return [";".join(systems[j] for j in range(n) if tied[i, j]) for i in range(n)]


def tied_from_pairwise(pairwise: pd.DataFrame, systems: list[str]) -> list[str]:
    """:func:`tied_with` read off a :func:`pairwise_win_probability` table, for ``systems`` in order."""
    tied = pairwise[pairwise["tied"].astype(bool)]
    partners: dict[str, list[str]] = {}
    for a, b in zip(tied["system_a"], tied["system_b"], strict=True):
        partners.setdefault(str(a), []).append(str(b))
    return [";".join(sorted(partners.get(name, []), key=systems.index)) for name in systems]
