"""Dimension-level analyses of the per-source scores: correlations, breakdowns, ablations, accuracy.

Every function takes the reduce's ``source_metrics`` table (one row per cited source, the 8 rubric
columns, ``weighted_total_content_score``, ``unweighted_mean_score``, ``query_type``, ``language``)
and aggregates with plain means over sources, as the official leaderboard does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.stats import pearsonr

from jobs.analysis.correlation import spearman_test
from jobs.analysis.urls import canonical_url, registered_domain
from judge.rubric import DIMENSION_KEYS

WEIGHTED = "weighted_total_content_score"
UNWEIGHTED = "unweighted_mean_score"


def dimension_correlations(sources: pd.DataFrame, method: str = "spearman") -> pd.DataFrame:
    """The 8 x 8 correlation matrix of the rubric dimensions over sources (pairwise-complete)."""
    dims = sources[list(DIMENSION_KEYS)].apply(pd.to_numeric, errors="coerce")
    return dims.corr(method=method)


def breakdown(
    sources: pd.DataFrame, by: str, score: str = WEIGHTED, min_sources: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """System x ``by`` (e.g. ``query_type``, ``language``) table of mean scores and of source counts.

    Args:
        sources: Per-source rows.
        by: The grouping column; missing values are shown as ``unknown`` (callers that must not
            present a missing value as a level, such as the language breakdown, drop them first).
        score: The score column averaged.
        min_sources: Cells with fewer sources are blanked in the means table (still counted).

    Returns:
        ``(means, counts)``, both indexed by ``model_name`` with one column per level of ``by``
        plus ``all``.
    """
    frame = pd.DataFrame(
        {
            "model_name": sources["model_name"].astype(str),
            by: sources[by].astype("string").fillna("unknown").replace("", "unknown"),
            "score": pd.to_numeric(sources[score], errors="coerce"),
        }
    )
    means = frame.pivot_table(index="model_name", columns=by, values="score", aggfunc="mean")
    counts = frame.pivot_table(index="model_name", columns=by, values="score", aggfunc="count", fill_value=0)
    means = means.where(counts.reindex_like(means).fillna(0) >= min_sources)
    means["all"] = frame.groupby("model_name")["score"].mean()
    counts["all"] = frame.groupby("model_name")["score"].count()
    means.columns.name = counts.columns.name = by
    return means, counts.astype(int)


def per_dimension_means(sources: pd.DataFrame) -> pd.DataFrame:
    """Mean of each dimension per system (index ``model_name``, the 8 dimension columns)."""
    dims = sources[list(DIMENSION_KEYS)].apply(pd.to_numeric, errors="coerce")
    return dims.groupby(sources["model_name"].astype(str)).mean()


def ablation_table(
    sources: pd.DataFrame,
    system_metadata: pd.DataFrame,
    rows: str,
    columns: str,
    score: str = WEIGHTED,
) -> pd.DataFrame:
    """Mean source score for each combination of two system factors (e.g. model x retrieval tool).

    Args:
        sources: Per-source rows.
        system_metadata: ``system`` plus factor columns (``labels.load_system_metadata``).
        rows: Factor shown as rows.
        columns: Factor shown as columns.
        score: Score column averaged over the sources of the systems in each cell.

    Returns:
        A table with the ``columns`` levels and a ``mean`` column, plus a ``mean`` row (margins are
        means over sources, like the cells). Systems absent from the metadata are left out.
    """
    for factor in (rows, columns):
        if factor not in system_metadata.columns:
            raise KeyError(f"system metadata has no factor {factor!r} (has {list(system_metadata.columns)})")
    joined = pd.DataFrame(
        {"system": sources["model_name"].astype(str), "score": pd.to_numeric(sources[score], errors="coerce")}
    ).merge(system_metadata[["system", rows, columns]].drop_duplicates("system"), on="system", how="inner")
    table = joined.pivot_table(
        index=rows, columns=columns, values="score", aggfunc="mean", margins=True, margins_name="mean"
    )
    table.columns.name = columns
    return table


def correctness_correlations(sources: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Correlation of each dimension (and both totals) with answer correctness, over (system, query).

    Source scores are first averaged per (system, query) (the official ``query_metrics``), then
    joined with the labels on ``(system, query_id)``.

    Returns:
        One row per score column: ``score, n, spearman_rho, spearman_p, pearson_r`` (point-biserial
        for 0/1 labels), ``mean_when_correct``, ``mean_when_incorrect``.
    """
    columns = [*DIMENSION_KEYS, WEIGHTED, UNWEIGHTED]
    scores = sources[columns].apply(pd.to_numeric, errors="coerce")
    keys = [sources["model_name"].astype(str).rename("system"), sources["query_id"].astype(str)]
    per_query = scores.groupby(keys).mean().reset_index()
    joined = per_query.merge(labels, on=["system", "query_id"], how="inner")
    out = []
    for column in columns:
        pair = joined[[column, "correct"]].dropna()
        x, y = pair[column].to_numpy(float), pair["correct"].to_numpy(float)
        ok = len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0
        test = spearman_test(x, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = pearsonr(x, y).statistic if ok else np.nan
        out.append(
            {
                "score": column,
                "n": len(x),
                "spearman_rho": test.rho,
                "spearman_p": test.p_value,
                "p_method": test.method,
                "pearson_r": float(r),
                "mean_when_correct": float(x[y >= 0.5].mean()) if (y >= 0.5).any() else np.nan,
                "mean_when_incorrect": float(x[y < 0.5].mean()) if (y < 0.5).any() else np.nan,
            }
        )
    return pd.DataFrame(out)


def factor_means(
    sources: pd.DataFrame, system_metadata: pd.DataFrame, factor: str, score: str = WEIGHTED
) -> pd.DataFrame:
    """Mean source score per level of one system factor: ``<factor>, systems, sources, <score>``."""
    joined = pd.DataFrame(
        {"system": sources["model_name"].astype(str), score: pd.to_numeric(sources[score], errors="coerce")}
    ).merge(system_metadata[["system", factor]], on="system", how="inner")
    grouped = joined.groupby(factor, sort=True)
    return pd.DataFrame(
        {"systems": grouped["system"].nunique(), "sources": grouped.size(), score: grouped[score].mean()}
    ).reset_index()


def top_domains(sources: pd.DataFrame, top: int = 15) -> pd.DataFrame:
    """The most cited registered domains: ``domain, sources, share_pct, systems, <score>, authority``."""
    urls = sources["source_url"].astype("string").fillna("")
    domains = {u: registered_domain(canonical_url(u)) or "(no URL)" for u in urls.unique()}
    frame = pd.DataFrame(
        {
            "domain": urls.map(domains),
            "system": sources["model_name"].astype(str),
            WEIGHTED: pd.to_numeric(sources[WEIGHTED], errors="coerce"),
            "authority": pd.to_numeric(sources["authority"], errors="coerce"),
        }
    )
    grouped = frame.groupby("domain")
    table = pd.DataFrame(
        {
            "sources": grouped.size(),
            "share_pct": 100.0 * grouped.size() / max(len(frame), 1),
            "systems": grouped["system"].nunique(),
            WEIGHTED: grouped[WEIGHTED].mean(),
            "authority": grouped["authority"].mean(),
        }
    )
    return table.sort_values(["sources", WEIGHTED], ascending=[False, False]).head(top).reset_index()
