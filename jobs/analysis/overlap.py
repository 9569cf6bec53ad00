"""Overlap between the sources of each system and a search engine's ranked results (SERP).

A SERP is a system like any other in the citations table (``system, query_id, url, rank``) whose
URLs are the engine's ranked results. For each other system, a cited source overlaps when the SERP
holds the same canonical URL (URL level) or any page of the same registered domain (domain level)
*for the same query*. Only queries the SERP answered count, so a missing SERP query is not read as
zero overlap. The share is pooled over (query, source) pairs, which equals the official
``percentage_ge_sources_in_se_sources`` averaged over sources.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import pearsonr

from jobs.analysis.correlation import spearman_test
from jobs.analysis.urls import canonical_url, registered_domain

OVERLAP_COLUMNS = [
    "system",
    "serp_system",
    "num_queries",
    "num_sources",
    "url_overlap_pct",
    "domain_overlap_pct",
]


def _identities(cited: pd.DataFrame) -> pd.DataFrame:
    """``system, query_id, rank, url_canonical, domain`` with one row per distinct (system, query, URL)."""
    unique_urls = pd.Series(cited["url"].astype(str).unique())
    canon = dict(zip(unique_urls, unique_urls.map(canonical_url), strict=True))
    out = pd.DataFrame(
        {
            "system": cited["system"].astype(str).to_numpy(),
            "query_id": cited["query_id"].astype(str).to_numpy(),
            "rank": pd.to_numeric(cited["rank"], errors="coerce").to_numpy() if "rank" in cited else np.nan,
            "url_canonical": cited["url"].astype(str).map(canon).to_numpy(),
        }
    )
    out = out.sort_values(["system", "query_id", "rank"], kind="stable")
    out = out.drop_duplicates(["system", "query_id", "url_canonical"])
    domains = {u: registered_domain(u) for u in out["url_canonical"].unique()}
    out["domain"] = out["url_canonical"].map(domains)
    return out.reset_index(drop=True)


def source_overlap_flags(
    cited: pd.DataFrame, serp_system: str, serp_top_k: int | None = None
) -> pd.DataFrame:
    """Per cited source of every non-SERP system: does the SERP hold its URL / its domain for that query?

    Args:
        cited: ``system, query_id, url`` and optionally ``rank`` (citations, or source rows renamed).
        serp_system: The system whose rows are the search engine's results.
        serp_top_k: Keep only SERP results ranked 1..k (e.g. Google's top 10); None keeps all.

    Returns:
        ``system, query_id, url_canonical, domain, in_serp_url, in_serp_domain`` for the queries
        the SERP answered.
    """
    ids = _identities(cited)
    serp = ids[ids["system"] == serp_system]
    if serp.empty:
        raise ValueError(
            f"no rows for SERP system {serp_system!r} (systems: {sorted(ids['system'].unique())})"
        )
    if serp_top_k is not None:
        serp = serp[serp["rank"] <= serp_top_k]
    others = ids[(ids["system"] != serp_system) & ids["query_id"].isin(serp["query_id"].unique())]
    url_hits = serp[["query_id", "url_canonical"]].drop_duplicates().assign(in_serp_url=True)
    domain_hits = serp[["query_id", "domain"]].drop_duplicates().assign(in_serp_domain=True)
    flags = others.merge(url_hits, on=["query_id", "url_canonical"], how="left").merge(
        domain_hits, on=["query_id", "domain"], how="left"
    )
    flags["in_serp_url"] = flags["in_serp_url"].astype("boolean").fillna(False).astype(bool)
    flags["in_serp_domain"] = flags["in_serp_domain"].astype("boolean").fillna(False).astype(bool)
    return flags[["system", "query_id", "url_canonical", "domain", "in_serp_url", "in_serp_domain"]]


def serp_overlap(
    cited: pd.DataFrame, serp_systems: Sequence[str], serp_top_k: int | None = None
) -> pd.DataFrame:
    """Share (percent) of each system's sources found in each SERP, at URL and at domain level.

    Returns:
        One row per (system, serp_system) with the columns of ``OVERLAP_COLUMNS``.
    """
    tables = []
    for serp_system in serp_systems:
        flags = source_overlap_flags(cited, serp_system, serp_top_k)
        grouped = flags.groupby("system", sort=True)
        table = pd.DataFrame(
            {
                "num_queries": grouped["query_id"].nunique(),
                "num_sources": grouped.size(),
                "url_overlap_pct": 100.0 * grouped["in_serp_url"].mean(),
                "domain_overlap_pct": 100.0 * grouped["in_serp_domain"].mean(),
            }
        ).reset_index()
        table.insert(1, "serp_system", serp_system)
        tables.append(table)
    if not tables:
        return pd.DataFrame(columns=OVERLAP_COLUMNS)
    return pd.concat(tables, ignore_index=True)[OVERLAP_COLUMNS]


def score_vs_overlap(
    overlap: pd.DataFrame, leaderboard: pd.DataFrame, score: str = "weighted_total_content_score"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Join each system's score to its overlap and correlate them across systems.

    Args:
        overlap: Output of :func:`serp_overlap`.
        leaderboard: ``model_name`` and ``score`` (``leaderboard_overall``).
        score: The score column.

    Returns:
        The joined table (``system, serp_system, url_overlap_pct, domain_overlap_pct, <score>``) and
        one row per (serp_system, level) with ``n_systems, spearman_rho, spearman_p, p_method,
        pearson_r`` (``p_method``: ``exact`` permutation p for up to 9 systems, see
        :mod:`jobs.analysis.correlation`);
        the paper's finding is a negative relation (more SERP overlap, lower source quality).
    """
    scores = leaderboard[["model_name", score]].rename(columns={"model_name": "system"})
    joined = overlap.merge(scores, on="system", how="inner")
    stats = []
    for serp_system, group in joined.groupby("serp_system", sort=True):
        for level in ("url_overlap_pct", "domain_overlap_pct"):
            x, y = group[level].to_numpy(float), group[score].to_numpy(float)
            ok = len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0
            test = spearman_test(x, y)
            stats.append(
                {
                    "serp_system": serp_system,
                    "level": level.removesuffix("_overlap_pct"),
                    "n_systems": len(x),
                    "spearman_rho": test.rho,
                    "spearman_p": test.p_value,
                    "p_method": test.method,
                    "pearson_r": float(pearsonr(x, y).statistic) if ok else np.nan,
                }
            )
    return joined, pd.DataFrame(stats)


def score_by_overlap(flags: pd.DataFrame, sources: pd.DataFrame) -> pd.DataFrame:
    """Mean source score of each system split by whether the SERP also holds the source's URL.

    Args:
        flags: Output of :func:`source_overlap_flags`.
        sources: ``model_name, query_id, source_url, weighted_total_content_score`` (source_metrics).

    Returns:
        ``system, in_serp_score, not_in_serp_score, in_serp_sources, not_in_serp_sources``.
    """
    canon = {u: canonical_url(u) for u in sources["source_url"].astype(str).unique()}
    scored = pd.DataFrame(
        {
            "system": sources["model_name"].astype(str),
            "query_id": sources["query_id"].astype(str),
            "url_canonical": sources["source_url"].astype(str).map(canon),
            "score": pd.to_numeric(sources["weighted_total_content_score"], errors="coerce"),
        }
    ).merge(flags[["system", "query_id", "url_canonical", "in_serp_url"]], how="inner")
    table = scored.pivot_table(
        index="system", columns="in_serp_url", values="score", aggfunc=["mean", "count"]
    )
    out = pd.DataFrame(index=table.index)
    for flag, name in ((True, "in_serp"), (False, "not_in_serp")):
        out[f"{name}_score"] = table[("mean", flag)] if ("mean", flag) in table else np.nan
    for flag, name in ((True, "in_serp"), (False, "not_in_serp")):
        counts = table[("count", flag)] if ("count", flag) in table else 0
        out[f"{name}_sources"] = pd.Series(counts, index=out.index).fillna(0).astype(int)
    return out.reset_index()
