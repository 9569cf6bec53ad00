"""Dimension analyses against independent computations (scipy, plain pandas loops)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from jobs.analysis.dimensions import (
    ablation_table,
    breakdown,
    correctness_correlations,
    dimension_correlations,
)
from judge.rubric import DIMENSION_KEYS


@pytest.fixture
def sources() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 300
    frame = pd.DataFrame(
        {
            "model_name": rng.choice(["a", "b", "c", "d"], n),
            "query_id": rng.integers(1, 16, n).astype(str),
            "query_type": rng.choice(["VACOS", "HotpotQA"], n),
            "language": rng.choice(["en", "fr", None], n),
        }
    )
    base = rng.integers(1, 6, n)
    for i, key in enumerate(DIMENSION_KEYS):
        frame[key] = np.clip(base + rng.integers(-1 - i % 3, 2, n), 1, 5).astype(float)
    frame.loc[::9, "freshness"] = np.nan
    frame["weighted_total_content_score"] = frame[list(DIMENSION_KEYS)].fillna(0).sum(axis=1) * 2.5
    frame["unweighted_mean_score"] = frame[list(DIMENSION_KEYS)].mean(axis=1)
    return frame


def test_correlations_equal_pairwise_scipy(sources: pd.DataFrame) -> None:
    corr = dimension_correlations(sources)
    for a in DIMENSION_KEYS:
        for b in DIMENSION_KEYS:
            pair = sources[[a, b]].dropna()
            expected = 1.0 if a == b else spearmanr(pair[a], pair[b]).statistic
            assert corr.loc[a, b] == pytest.approx(expected)


def test_breakdown_means_counts_and_blanking(sources: pd.DataFrame) -> None:
    means, counts = breakdown(sources, "language", min_sources=20)
    for (system, language), group in sources.fillna({"language": "unknown"}).groupby(
        ["model_name", "language"]
    ):
        assert counts.loc[system, language] == len(group)
        expected = group["weighted_total_content_score"].mean() if len(group) >= 20 else np.nan
        assert means.loc[system, language] == pytest.approx(expected, nan_ok=True)
    assert means.loc["a", "all"] == pytest.approx(
        sources.query("model_name == 'a'")["weighted_total_content_score"].mean()
    )


def test_ablation_cells_and_margins_are_means_over_sources(sources: pd.DataFrame) -> None:
    meta = pd.DataFrame(
        {"system": ["a", "b", "c", "d"], "model": ["m1", "m1", "m2", "m2"], "tool": ["t1", "t2"] * 2}
    )
    table = ablation_table(sources, meta, "model", "tool")
    score = sources.set_index("model_name")["weighted_total_content_score"]
    assert table.loc["m2", "t1"] == pytest.approx(score.loc["c"].mean())
    assert table.loc["m1", "mean"] == pytest.approx(score.loc[["a", "b"]].mean())
    assert table.loc["mean", "t2"] == pytest.approx(score.loc[["b", "d"]].mean())
    with pytest.raises(KeyError, match="no factor 'size'"):
        ablation_table(sources, meta, "model", "size")


def test_correctness_correlation_per_system_query(sources: pd.DataFrame) -> None:
    per_query = sources.groupby(["model_name", "query_id"])["authority"].mean()
    labels = pd.DataFrame(
        {"system": per_query.index.get_level_values(0), "query_id": per_query.index.get_level_values(1)}
    )
    labels["correct"] = (per_query.to_numpy() >= 3).astype(float)
    table = correctness_correlations(sources, labels).set_index("score")
    assert table.loc["authority", "n"] == len(per_query)
    assert table.loc["authority", "spearman_rho"] == pytest.approx(
        spearmanr(per_query, labels["correct"]).statistic
    )
    assert table.loc["authority", "mean_when_correct"] == pytest.approx(per_query[per_query >= 3].mean())
