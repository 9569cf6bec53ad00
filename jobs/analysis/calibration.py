"""Judge calibration: agreement between judge configurations and human annotators, and gating.

Inputs are human labels (``labels.load_human_labels``) and one or more runs. A run's judge scores
come from its ``judgments/`` (one configuration per engine/model/prompt layout/rubric version, so
a run rescored with another layout or model holds two configurations) joined to ``pages/`` for the
URL, or, for runs without judgment records, from ``leaderboard/source_metrics``. Items are matched
on (query_id, canonical URL).

Comparisons: every judge configuration against the human consensus (mean of the annotators),
every pair of annotators, every pair of judge configurations; each per dimension and pooled over
all dimensions (``all``). The gate checks judge-vs-human rows against thresholds (default: the
paper's bar, MAE <= 0.5 on every dimension).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from crawler.base import ConfigModel, RunStore
from crawler.layout import LAYOUT
from jobs.analysis.agreement import agreement_summary, krippendorff_alpha
from jobs.analysis.run_data import JUDGMENT_COLUMNS, read_frame
from jobs.analysis.urls import canonical_url
from judge.rubric import DIMENSION_KEYS

ITEM = ["query_id", "url_canonical"]
HUMAN = "human"
AGREEMENT_COLUMNS = [
    "comparison",
    "rater_a",
    "rater_b",
    "dimension",
    "n",
    "mae",
    "qwk",
    "spearman",
    "alpha_ordinal",
    "alpha_interval",
]


class GateThresholds(ConfigModel):
    """When a judge configuration passes calibration (judge vs human consensus)."""

    max_mae: float = Field(0.5, ge=0, description="Largest mean absolute error allowed on any dimension.")
    max_mae_by_dimension: dict[str, float] = Field(
        default_factory=dict, description="Per-dimension MAE limits that override max_mae."
    )

    @field_validator("max_mae_by_dimension")
    @classmethod
    def _known_dimensions(cls, limits: dict[str, float]) -> dict[str, float]:
        for dimension, limit in limits.items():
            if dimension not in DIMENSION_KEYS:
                known = ", ".join(DIMENSION_KEYS)
                raise ValueError(f"unknown dimension {dimension!r}; dimensions are {known}")
            if limit < 0:
                raise ValueError(f"MAE limit of {dimension} must be >= 0, got {limit}")
        return limits

    min_qwk: float | None = Field(
        None, description="Smallest quadratic-weighted kappa allowed (None: unchecked)."
    )
    min_alpha: float | None = Field(
        None, description="Smallest Krippendorff's alpha (interval) allowed (None: unchecked)."
    )
    min_items: int = Field(
        1, ge=1, description="Fewest labelled items a dimension needs to be judged at all."
    )


def _config_label(frame: pd.DataFrame) -> pd.Series:
    parts = [
        frame[c].astype("string").fillna("-") for c in ("engine", "model", "prompt_layout", "rubric_version")
    ]
    label = parts[0]
    for part in parts[1:]:
        label = label + "/" + part
    return label


def judge_scores(run_uri: str, prefix: str = "") -> dict[str, pd.DataFrame]:
    """Judge scores of one run per configuration: label -> frame ``query_id, url_canonical, <dims>``.

    Args:
        run_uri: The run directory.
        prefix: Prepended to every configuration label (to tell runs apart).
    """
    store = RunStore(run_uri)
    judgments = read_frame(store, LAYOUT.judgments, (*JUDGMENT_COLUMNS, "scores"))
    pages = read_frame(store, LAYOUT.pages, ("url_key", "url"))
    if judgments is not None and pages is not None and len(judgments):
        scored = judgments[judgments["status"] == "scored"].assign(config=lambda f: _config_label(f))
        exploded = (
            scored[["config", "url_key", "query_id", "scores"]].explode("scores").dropna(subset=["scores"])
        )
        long = pd.DataFrame(
            {
                "config": exploded["config"].to_numpy(),
                "url_key": exploded["url_key"].to_numpy(),
                "query_id": exploded["query_id"].astype(str).to_numpy(),
                "dimension": [s["dimension"] for s in exploded["scores"]],
                "score": pd.to_numeric([s["score"] for s in exploded["scores"]], errors="coerce"),
            }
        )
        urls = pages.drop_duplicates("url_key").set_index("url_key")["url"]
        long["url_canonical"] = long["url_key"].map(urls).map(canonical_url, na_action="ignore")
        wide = long.dropna(subset=["url_canonical"]).pivot_table(
            index=["config", *ITEM], columns="dimension", values="score", aggfunc="mean"
        )
        wide = wide.reindex(columns=list(DIMENSION_KEYS)).reset_index()
        return {
            f"{prefix}{name}": group.drop(columns="config").reset_index(drop=True)
            for name, group in wide.groupby("config", sort=True)
        }
    sources = read_frame(store, LAYOUT.source_metrics_table)
    if sources is None:
        return {}
    sources = sources.assign(
        query_id=sources["query_id"].astype(str), url_canonical=sources["source_url"].map(canonical_url)
    )
    scores = sources.groupby(ITEM)[list(DIMENSION_KEYS)].mean().reset_index()
    return {f"{prefix}source_metrics": scores}


def human_consensus(labels: pd.DataFrame) -> pd.DataFrame:
    """Mean score of the annotators per item and dimension (NaN where nobody rated it)."""
    dims = [d for d in DIMENSION_KEYS if d in labels]
    return labels.groupby(ITEM)[dims].mean().reindex(columns=list(DIMENSION_KEYS)).reset_index()


def compare(a: pd.DataFrame, b: pd.DataFrame, rater_a: str, rater_b: str, comparison: str) -> pd.DataFrame:
    """Agreement of two raters on their common items, per dimension and pooled (``all``)."""
    joined = a.merge(b, on=ITEM, suffixes=("_a", "_b"))
    rows = []
    pooled_a, pooled_b = [], []
    for dim in DIMENSION_KEYS:
        if f"{dim}_a" not in joined or f"{dim}_b" not in joined:
            continue
        xa, xb = joined[f"{dim}_a"].to_numpy(float), joined[f"{dim}_b"].to_numpy(float)
        pooled_a.append(xa)
        pooled_b.append(xb)
        rows.append({"dimension": dim, **agreement_summary(xa, xb)})
    if pooled_a:
        rows.append(
            {"dimension": "all", **agreement_summary(np.concatenate(pooled_a), np.concatenate(pooled_b))}
        )
    table = pd.DataFrame(rows)
    table.insert(0, "comparison", comparison)
    table.insert(1, "rater_a", rater_a)
    table.insert(2, "rater_b", rater_b)
    return table.reindex(columns=AGREEMENT_COLUMNS)


def annotator_alpha(labels: pd.DataFrame) -> pd.DataFrame:
    """Krippendorff's alpha over all annotators at once, per dimension: ``dimension, n_items, alpha_*``."""
    rows = []
    for dim in [d for d in DIMENSION_KEYS if d in labels]:
        matrix = labels.pivot_table(index="annotator", columns=ITEM, values=dim, aggfunc="mean").to_numpy(
            float
        )
        rows.append(
            {
                "dimension": dim,
                "n_items": int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum()),
                "alpha_ordinal": krippendorff_alpha(matrix, "ordinal"),
                "alpha_interval": krippendorff_alpha(matrix, "interval"),
            }
        )
    return pd.DataFrame(rows)


@dataclass
class Calibration:
    """Everything ``sourcebench calibrate`` reports."""

    agreement: pd.DataFrame
    """All comparisons (``AGREEMENT_COLUMNS``)."""
    annotators: pd.DataFrame | None
    """Multi-annotator alpha per dimension (None with fewer than two annotators)."""
    gate: pd.DataFrame
    """One row per (configuration, dimension) checked, with ``passed`` and the failure ``reason``."""

    @property
    def passed(self) -> bool:
        return bool(len(self.gate)) and bool(self.gate["passed"].all())


def gate(agreement: pd.DataFrame, thresholds: GateThresholds, configs: list[str]) -> pd.DataFrame:
    """Check judge-vs-human agreement of ``configs`` dimension by dimension."""
    rows = []
    judged = agreement[(agreement["comparison"] == "judge_vs_human") & agreement["rater_a"].isin(configs)]
    for config in configs:
        mine = judged[judged["rater_a"] == config].set_index("dimension")
        for dim in DIMENSION_KEYS:
            limit = thresholds.max_mae_by_dimension.get(dim, thresholds.max_mae)
            row = mine.loc[dim] if dim in mine.index else None
            n = int(row["n"]) if row is not None else 0
            reasons = []
            if n < thresholds.min_items:
                reasons.append(f"only {n} labelled items (need {thresholds.min_items})")
            else:
                if not row["mae"] <= limit:
                    reasons.append(f"MAE {row['mae']:.3f} > {limit}")
                if thresholds.min_qwk is not None and not row["qwk"] >= thresholds.min_qwk:
                    reasons.append(f"QWK {row['qwk']:.3f} < {thresholds.min_qwk}")
                if thresholds.min_alpha is not None and not row["alpha_interval"] >= thresholds.min_alpha:
                    reasons.append(f"alpha {row['alpha_interval']:.3f} < {thresholds.min_alpha}")
            rows.append(
                {
                    "config": config,
                    "dimension": dim,
                    "n": n,
                    "mae": row["mae"] if row is not None else np.nan,
                    "max_mae": limit,
                    "qwk": row["qwk"] if row is not None else np.nan,
                    "alpha_interval": row["alpha_interval"] if row is not None else np.nan,
                    "passed": not reasons,
                    "reason": "; ".join(reasons),
                }
            )
    return pd.DataFrame(rows)


def calibrate(
    judges: dict[str, pd.DataFrame],
    labels: pd.DataFrame | None,
    thresholds: GateThresholds | None = None,
    gate_configs: list[str] | None = None,
) -> Calibration:
    """Compare judges with humans, annotators with each other, judges with each other; gate.

    Args:
        judges: Configuration label -> judge scores (from :func:`judge_scores`).
        labels: Human labels, or None to compare judge configurations only.
        thresholds: Gate thresholds (default :class:`GateThresholds`).
        gate_configs: Configurations to gate (default: all); needs ``labels``.
    """
    thresholds = thresholds or GateThresholds()
    tables = []
    annotators = None
    if labels is not None:
        consensus = human_consensus(labels)
        for name, scores in judges.items():
            tables.append(compare(scores, consensus, name, HUMAN, "judge_vs_human"))
        names = sorted(labels["annotator"].unique())
        for first, second in combinations(names, 2):
            a = labels[labels["annotator"] == first].drop(columns="annotator")
            b = labels[labels["annotator"] == second].drop(columns="annotator")
            dims = [d for d in DIMENSION_KEYS if d in labels]
            tables.append(
                compare(a[[*ITEM, *dims]], b[[*ITEM, *dims]], first, second, "annotator_vs_annotator")
            )
        if len(names) >= 2:
            annotators = annotator_alpha(labels)
    for first, second in combinations(sorted(judges), 2):
        tables.append(compare(judges[first], judges[second], first, second, "judge_vs_judge"))
    agreement = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=AGREEMENT_COLUMNS)
    checked = (gate_configs or sorted(judges)) if labels is not None else []
    return Calibration(agreement, annotators, gate(agreement, thresholds, checked))
