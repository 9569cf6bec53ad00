"""Manipulation per system: the share of each system's cited sources whose page the crawler flagged."""

from __future__ import annotations

import pandas as pd

from crawler.manipulation import MANIPULATION_KINDS


def manipulation_by_system(sources: pd.DataFrame, pages: pd.DataFrame | None) -> pd.DataFrame | None:
    """``model_name, sources, flagged, flagged_pct`` and one count column per manipulation kind.

    Sources are matched to page records by URL (``source_url`` = the page's canonical ``url``) or by
    ``agg_source_id`` = ``url_key``. None when the run's page records carry no ``manipulation`` column.
    """
    if pages is None or "manipulation" not in pages or sources.empty:
        return None
    flags = pages[["url_key", "url", "manipulation"]].copy()
    flags["manipulation"] = flags["manipulation"].map(lambda v: list(v) if v is not None else [])
    by_url = dict(zip(flags["url"], flags["manipulation"], strict=True))
    by_key = dict(zip(flags["url_key"], flags["manipulation"], strict=True))
    kinds = [
        by_url.get(url, by_key.get(key, []))
        for url, key in zip(sources["source_url"], sources["agg_source_id"], strict=True)
    ]
    table = pd.DataFrame({"model_name": sources["model_name"].astype(str).to_numpy()})
    table["flagged"] = [bool(k) for k in kinds]
    for kind in MANIPULATION_KINDS:
        table[kind] = [kind in k for k in kinds]
    grouped = table.groupby("model_name")
    out = grouped[["flagged", *MANIPULATION_KINDS]].sum().astype(int)
    out.insert(0, "sources", grouped.size())
    out.insert(2, "flagged_pct", 100.0 * out["flagged"] / out["sources"])
    return out.reset_index()
