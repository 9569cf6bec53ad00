"""Pick few-shot calibration examples for the judge from human-labelled pages.

Output is the judge's calibration file format (``judge/data/calibration.yaml``, read by
``judge.prompts.load_calibration``): a ``version`` and, per stage, a list of ``{page, answer}`` where
``page`` describes the page in a few lines and ``answer`` holds exactly the stage's dimensions as
``{score, justification}``.

Selection, per stage: items on which every annotator scored every dimension of the stage and the
annotators agree within one point; the answer is the median score (rounded half up). Among them,
examples are picked greedily to spread over the score range: the best page, the worst page, then
each time the page whose mean stage score is farthest from those already picked (ties: smaller
annotator disagreement, then query id and URL, so the choice is deterministic).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd
import yaml

from judge.rubric import STAGES, stage_dimensions

ITEM = ["query_id", "url_canonical"]


def _consensus(labels: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
    """Per item: median score per dimension, annotators, and the largest disagreement (max - min)."""
    rated = labels.dropna(subset=dims)
    grouped = rated.groupby(ITEM)
    median = grouped[dims].median()
    spread = (grouped[dims].max() - grouped[dims].min()).max(axis=1)
    out = np.floor(median + 0.5).astype(int)
    out["spread"] = spread
    out["annotators"] = grouped.size()
    return out.reset_index()


def _spread_pick(candidates: pd.DataFrame, dims: list[str], k: int) -> pd.DataFrame:
    pool = candidates.assign(mean=candidates[dims].mean(axis=1)).sort_values(["spread", *ITEM])
    chosen: list[int] = []
    while len(chosen) < min(k, len(pool)):
        rest = pool.drop(index=chosen)
        if not chosen:
            pick = rest["mean"].idxmax()
        elif len(chosen) == 1:
            pick = rest["mean"].idxmin()
        else:
            distance = rest["mean"].map(lambda m: min(abs(m - pool.loc[c, "mean"]) for c in chosen))
            pick = distance.idxmax()
        chosen.append(pick)
    return pool.loc[chosen]


def _present(value: Any) -> bool:
    """False for None, NaN, empty strings and empty lists (page fields a crawl did not find)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    return len(value) > 0 if hasattr(value, "__len__") else True


def _meta_line(page: dict[str, Any]) -> str:
    named = (("published_date", "published"), ("modified_date", "modified"))
    dates = [f"{name} {page[key]}" for key, name in named if _present(page.get(key))]
    author = ", ".join(page["authors"]) if _present(page.get("authors")) else "none found"
    site = next((page[k] for k in ("site_name", "domain") if _present(page.get(k))), "unknown")
    return f"Dates: {', '.join(dates) or 'none found'}; author: {author}; site: {site}."


def _layout_line(signals: dict[str, Any]) -> str:
    density = signals.get("link_density")
    return (
        f"Signals: {signals.get('ad_label_count')} ad labels, {signals.get('popup_overlay_count')} overlays, "
        f"{signals.get('affiliate_cta_count')} affiliate calls to action"
        + (f", link density {density:.2f}." if density is not None else ".")
    )


def _describe(row: pd.Series, stage: str, page: dict[str, Any] | None, query: str | None, chars: int) -> str:
    """A few lines about the page, like the examples in the judge's calibration file."""
    parts = [f'Query "{query}".' if query else f"Query {row['query_id']}.", f"Page {row['url_canonical']}"]
    if not page:
        return " ".join(parts) + "."
    text = next((str(page[k]) for k in ("text_main", "text_full") if _present(page.get(k))), "")
    if _present(page.get("title")):
        parts[-1] += f', titled "{page["title"]}"'
    parts[-1] += f", {len(text):,} characters."
    if stage == "meta":
        parts.append(_meta_line(page))
    if stage == "layout" and _present(page.get("signals")):
        parts.append(_layout_line(page["signals"]))
    if text:
        excerpt = " ".join(text.split())[:chars]
        parts.append(f'Text begins: "{excerpt}{"..." if len(text) > chars else ""}"')
    return " ".join(parts)


def _justification(labels: pd.DataFrame, row: pd.Series, dim: str) -> str:
    column = f"{dim}_justification"
    if column in labels:
        mine = labels[
            (labels["query_id"] == row["query_id"]) & (labels["url_canonical"] == row["url_canonical"])
        ]
        texts = [t for t in mine[column].dropna() if str(t).strip()]
        if texts:
            return str(texts[0]).strip()
    who = "annotator" if row["annotators"] == 1 else f"{row['annotators']} annotators"
    return f"Human calibration label (median of {who})."


def pick_fewshot(
    labels: pd.DataFrame,
    pages: pd.DataFrame | None = None,
    queries: dict[str, str] | None = None,
    per_stage: int = 2,
    max_spread: float = 1.0,
    excerpt_chars: int = 240,
) -> dict[str, Any]:
    """Few-shot examples per stage in the judge's calibration format (a dict ready for YAML).

    Args:
        labels: Human labels (``labels.load_human_labels``).
        pages: Page records (``url`` canonical, ``title``, ``text_main``, dates, ``signals``) to
            describe the pages; without them an example names the query and URL only.
        queries: query_id -> query text.
        per_stage: Examples per stage.
        max_spread: Largest annotator disagreement (points) an example may have.
        excerpt_chars: Characters of page text quoted in each example.
    """
    by_url = {} if pages is None else {str(r["url"]): r for r in pages.to_dict("records")}
    out: dict[str, Any] = {}
    for stage in STAGES:
        dims = [d.key for d in stage_dimensions(stage)]
        if not set(dims) <= set(labels.columns):
            out[stage] = []
            continue
        candidates = _consensus(labels, dims)
        candidates = candidates[candidates["spread"] <= max_spread]
        examples = []
        for _, row in _spread_pick(candidates, dims, per_stage).iterrows():
            page = by_url.get(row["url_canonical"])
            examples.append(
                {
                    "page": _describe(row, stage, page, (queries or {}).get(row["query_id"]), excerpt_chars),
                    "answer": {
                        dim: {"score": int(row[dim]), "justification": _justification(labels, row, dim)}
                        for dim in dims
                    },
                }
            )
        out[stage] = examples
    digest = hashlib.sha256(yaml.safe_dump(out, sort_keys=True).encode()).hexdigest()[:10]
    return {"version": f"human-{digest}", **out}


def fewshot_yaml(payload: dict[str, Any]) -> str:
    """The calibration file text, with a header saying where it came from."""
    header = (
        "# Few-shot calibration examples picked by `sourcebench calibrate` from human-labelled pages.\n"
        "# Format: judge/data/calibration.yaml (use it as the judge's calibration_file).\n"
    )
    return header + yaml.safe_dump(payload, sort_keys=False, allow_unicode=True, width=100)
