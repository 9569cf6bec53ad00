"""Crawl funnel (how many URLs were fetched, failed and why) and judge usage (tokens, cost) of a run."""

from __future__ import annotations

import pandas as pd

from crawler.schema import PAGE_STATUSES
from jobs.analysis.config import Prices
from judge.schema import JUDGMENT_STATUSES


def funnel(
    citations: pd.DataFrame | None,
    pages: pd.DataFrame | None,
    judgments: pd.DataFrame | None,
    sources: pd.DataFrame,
) -> pd.DataFrame:
    """Counts at each step from cited URL to scored source: ``step, count, note``."""
    steps: list[dict[str, object]] = []
    if citations is not None:
        steps.append({"step": "citations (system x query x URL)", "count": len(citations), "note": ""})
    if pages is not None:
        ok = int((pages["status"] == "ok").sum())
        steps.append({"step": "distinct pages (canonical URLs)", "count": len(pages), "note": ""})
        steps.append(
            {
                "step": "pages fetched ok",
                "count": ok,
                "note": f"{100.0 * ok / max(len(pages), 1):.1f} % of pages",
            }
        )
    if judgments is not None and len(judgments):
        scored = judgments.assign(scored=judgments["status"] == "scored")
        per_pair = scored.groupby(["url_key", "query_id"])["scored"].all()
        steps.append(
            {
                "step": "page x query fully judged (all stages scored)",
                "count": int(per_pair.sum()),
                "note": f"of {len(per_pair)} judged page x query pairs",
            }
        )
    complete = int(sources["score_complete"].astype(bool).sum()) if "score_complete" in sources else None
    steps.append(
        {
            "step": "sources on the leaderboard",
            "count": len(sources),
            "note": f"{complete} with all 8 scores" if complete is not None else "",
        }
    )
    return pd.DataFrame(steps)


def page_statuses(pages: pd.DataFrame) -> pd.DataFrame:
    """``status, pages, share_pct`` in ``PAGE_STATUSES`` order (unknown statuses last), zero rows dropped."""
    counts = pages["status"].astype(str).value_counts()
    order = [s for s in PAGE_STATUSES if s in counts.index] + sorted(set(counts.index) - set(PAGE_STATUSES))
    table = pd.DataFrame({"status": order, "pages": [int(counts[s]) for s in order]})
    table["share_pct"] = 100.0 * table["pages"] / max(len(pages), 1)
    return table


def failure_reasons(pages: pd.DataFrame, top: int = 12) -> pd.DataFrame:
    """The most frequent ``(status, reason)`` among failed pages: ``status, reason, pages``."""
    failed = pages[pages["status"] != "ok"]
    if failed.empty:
        return pd.DataFrame(columns=["status", "reason", "pages"])
    reason = failed["error"].astype("string").fillna("").str.slice(0, 100)
    if "http_status" in failed:
        http = "HTTP " + failed["http_status"].astype("Int64").astype("string")
        reason = reason.where((reason != "") | http.isna(), http)
    table = (
        pd.DataFrame({"status": failed["status"].astype(str), "reason": reason.replace("", "(no message)")})
        .value_counts()
        .rename("pages")
        .reset_index()
    )
    return table.head(top)


def judge_usage(judgments: pd.DataFrame, prices: Prices | None = None) -> pd.DataFrame:
    """Requests, statuses, tokens, cache hit rate, latency (and cost) per engine, model, layout and stage.

    Returns:
        One row per group plus a ``total`` row; ``cost_usd`` only when ``prices`` is given.
    """
    frame = judgments.copy()
    keys = [k for k in ("engine", "model", "prompt_layout", "stage") if k in frame]
    for key in keys:
        frame[key] = frame[key].astype("string").fillna("-")
    for column in ("prompt_tokens", "cached_prompt_tokens", "output_tokens", "truncated_chars", "latency_s"):
        frame[column] = pd.to_numeric(frame.get(column), errors="coerce").fillna(0)
    for status in JUDGMENT_STATUSES:
        frame[status] = frame["status"] == status
    frame["truncated"] = frame["truncated_chars"] > 0
    aggregations = {
        "requests": ("status", "size"),
        **{status: (status, "sum") for status in JUDGMENT_STATUSES},
        "prompt_tokens": ("prompt_tokens", "sum"),
        "cached_prompt_tokens": ("cached_prompt_tokens", "sum"),
        "output_tokens": ("output_tokens", "sum"),
        "truncated": ("truncated", "sum"),
        "latency_s_mean": ("latency_s", "mean"),
    }
    table = frame.groupby(keys, sort=True).agg(**aggregations).reset_index()
    totals = {key: "total" if i == 0 else "" for i, key in enumerate(keys)}
    for name, (column, func) in aggregations.items():
        totals[name] = len(frame) if func == "size" else getattr(frame[column], func)()
    table = pd.concat([table, pd.DataFrame([totals])], ignore_index=True)
    table["cache_hit_pct"] = (
        100.0 * table["cached_prompt_tokens"] / table["prompt_tokens"].where(table["prompt_tokens"] > 0)
    )
    if prices is not None:
        cached_price = prices.usd_per_1m_cached_prompt_tokens
        cached_price = prices.usd_per_1m_prompt_tokens if cached_price is None else cached_price
        table["cost_usd"] = (
            (table["prompt_tokens"] - table["cached_prompt_tokens"]) * prices.usd_per_1m_prompt_tokens
            + table["cached_prompt_tokens"] * cached_price
            + table["output_tokens"] * prices.usd_per_1m_output_tokens
        ) / 1e6
    return table
