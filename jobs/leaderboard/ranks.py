"""The six official rank/overlap columns of ``compute_metrics.py``, computed from a SERP.

The official script reads these from a separate rank file per system (``--rank-run``); it defines
them by name only. Here they are computed from a search engine's ranked results for the same
queries (a SERP system of the audit, or ``reduce --serp``), with URLs compared by canonical form
(:func:`crawler.urls.url_key`). For one source ``s`` of system ``G`` cited for query ``q``, where the
SERP lists ``n`` distinct URLs for ``q`` and ``s`` is at position ``r`` (1-based, first occurrence):

- ``reciprocal_se_rank`` = ``1/r``; 0 when the SERP does not list ``s``;
- ``relative_se_rank`` = ``r/n`` (how far down the list, 1/n = top, 1 = last); null when not listed;
- ``normalized_reciprocal_se_rank`` = ``(1/r - 1/(n+1)) / (1 - 1/(n+1))``: 1 at the top, falling to
  0 for "not listed", which counts as position ``n+1``;
- ``avg_ge_freq`` = how many times ``G`` cited ``s`` for ``q``, averaged over ``G``'s answers to
  ``q`` (one answer per pair here, so the citation count; 1 when counts are unknown);
- ``percentage_ge_sources_in_se_sources`` = 100 x the share of ``G``'s sources for ``q`` that the
  SERP lists, and ``percentage_ge_sources_not_in_se_sources`` = 100 minus it (per query, repeated on
  each source row, as in the official files).

Queries the SERP did not answer get nulls (no evidence either way), and so do the SERP's own rows.
Averaged over a system's sources, ``percentage_ge_sources_in_se_sources`` is the paper's headline
overlap (GPT-5: 15.99 % of sources in Google's results).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from crawler.urls import InvalidURL, url_key
from jobs.leaderboard.metrics import RANK_COLUMNS

KEY_COLUMNS = ("model_name", "query_id", "agg_source_id")
RANKS_SCHEMA = pa.schema(
    [
        *(pa.field(name, pa.string()) for name in KEY_COLUMNS),
        *(pa.field(n, pa.float64()) for n in RANK_COLUMNS),
    ]
)


def _key(url: object) -> str | None:
    try:
        return url_key(str(url)) if url else None
    except InvalidURL:
        return None


def serp_positions(serp: pd.DataFrame) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """``(query_id, url_key) -> position`` (1-based, distinct URLs in rank order) and list lengths."""
    positions: dict[tuple[str, str], int] = {}
    lengths: dict[str, int] = {}
    for query_id, group in serp.sort_values(["query_id", "rank"], kind="stable").groupby(
        "query_id", sort=False
    ):
        seen: list[str] = []
        for key in (_key(url) for url in group["url"]):
            if key is not None and key not in seen:
                seen.append(key)
        lengths[str(query_id)] = len(seen)
        positions.update({(str(query_id), key): i + 1 for i, key in enumerate(seen)})
    return positions, lengths


def rank_metrics(
    sources: pd.DataFrame,
    serp: pd.DataFrame,
    serp_system: str | None = None,
    citation_counts: dict[tuple[str, str, str], int] | None = None,
) -> pa.Table:
    """The rank columns of every source (see the module docstring).

    Args:
        sources: ``model_name, query_id, agg_source_id, url`` (one row per scored source).
        serp: The SERP's ``query_id, url, rank`` rows.
        serp_system: The SERP's own system name, whose rows stay null.
        citation_counts: ``(model_name, query_id, url_key) -> times cited`` (None: 1 each).

    Returns:
        A :data:`RANKS_SCHEMA` table, one row per source that the SERP's queries cover.
    """
    positions, lengths = serp_positions(serp)
    frame = sources.assign(
        model_name=sources["model_name"].astype(str),
        query_id=sources["query_id"].astype(str),
        agg_source_id=sources["agg_source_id"].astype("string").fillna("").astype(str),
        url_key=[_key(url) for url in sources["url"]],
    )
    frame = frame[frame["query_id"].isin(lengths) & (frame["model_name"] != (serp_system or "\x00"))].copy()
    if frame.empty:
        return RANKS_SCHEMA.empty_table()
    r = np.array(
        [positions.get((q, k), 0) for q, k in zip(frame["query_id"], frame["url_key"], strict=True)], float
    )
    n = frame["query_id"].map(lengths).to_numpy(float)
    listed = r > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        reciprocal = np.where(listed, 1.0 / r, 0.0)
        floor = 1.0 / (n + 1.0)
        frame["reciprocal_se_rank"] = reciprocal
        frame["relative_se_rank"] = np.where(listed, r / n, np.nan)
        frame["normalized_reciprocal_se_rank"] = np.where(listed, (reciprocal - floor) / (1.0 - floor), 0.0)
    counts = citation_counts or {}
    frame["avg_ge_freq"] = [
        float(counts.get((m, q, k), 1)) if citation_counts is not None else 1.0
        for m, q, k in zip(frame["model_name"], frame["query_id"], frame["url_key"], strict=True)
    ]
    frame["listed"] = listed.astype(float)
    share = frame.groupby(["model_name", "query_id"])["listed"].transform("mean") * 100.0
    frame["percentage_ge_sources_in_se_sources"] = share
    frame["percentage_ge_sources_not_in_se_sources"] = 100.0 - share
    table = pa.Table.from_pandas(frame[[*KEY_COLUMNS, *RANK_COLUMNS]], preserve_index=False)
    return table.cast(RANKS_SCHEMA)


def citation_counts(citations: pd.DataFrame) -> dict[tuple[str, str, str], int]:
    """``(system, query_id, url_key) -> rows`` of a citations table (how often each URL was cited)."""
    keys = [_key(url) for url in citations["url"]]
    frame = pd.DataFrame(
        {
            "system": citations["system"].astype(str),
            "query_id": citations["query_id"].astype(str),
            "key": keys,
        }
    ).dropna()
    return {tuple(k): int(v) for k, v in frame.groupby(["system", "query_id", "key"]).size().items()}
