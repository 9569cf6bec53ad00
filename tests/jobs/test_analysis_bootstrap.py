"""Bootstrap intervals: checked against a naive loop over the same draws and against analytic cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jobs.analysis.bootstrap import (
    bootstrap_replicates,
    pairwise_win_probability,
    system_intervals,
    tied_with,
)


def _sources(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["model_name", "query_id", "weighted_total_content_score", "unweighted_mean_score"]
    )


def test_matches_naive_loop_over_the_same_draws() -> None:
    rng = np.random.default_rng(3)
    rows = []
    for system in ("a", "b", "c"):
        for q in range(15):
            for _ in range(int(rng.integers(1, 5))):
                rows.append((system, f"q{q:02d}", float(rng.normal(80, 8)), float(rng.normal(4, 0.5))))
    df = _sources(rows)
    df.loc[df.index % 5 == 0, "unweighted_mean_score"] = np.nan
    n_boot, seed = 50, 11
    systems, reps = bootstrap_replicates(df, "unweighted_mean_score", n_boot=n_boot, seed=seed)

    # Independent computation: draw the same query indices, concatenate the drawn queries' rows, nanmean.
    queries = sorted(df["query_id"].unique())
    draws = np.random.default_rng(seed).integers(0, len(queries), size=(n_boot, len(queries)))
    for b in range(n_boot):
        sample = pd.concat([df[df["query_id"] == queries[i]] for i in draws[b]])
        for j, system in enumerate(systems):
            expected = sample.loc[sample["model_name"] == system, "unweighted_mean_score"].mean()
            assert reps[b, j] == pytest.approx(expected, rel=1e-12)


def test_constant_scores_give_a_degenerate_interval() -> None:
    df = _sources([("s", f"q{i}", 70.0, 3.0) for i in range(10)] + [("s", "q0", 70.0, np.nan)])
    iv = system_intervals(df, n_boot=200)
    row = iv.iloc[0]
    assert (row.weighted_ci_low, row.weighted_ci_high) == (70.0, 70.0)
    assert (row.unweighted_ci_low, row.unweighted_ci_high) == (3.0, 3.0)


def test_interval_width_matches_the_normal_approximation() -> None:
    # One source per query: the bootstrap mean has sd = population sd / sqrt(n), so the 95 % interval
    # is close to mean +- 1.96 sd / sqrt(n) for n = 400 queries.
    values = np.random.default_rng(0).normal(75, 10, size=400)
    df = _sources([("s", f"q{i}", float(v), float(v) / 20) for i, v in enumerate(values)])
    iv = system_intervals(df, n_boot=4000, seed=1).iloc[0]
    half = 1.959964 * values.std() / np.sqrt(len(values))
    assert iv.weighted_ci_low == pytest.approx(values.mean() - half, abs=0.12 * half)
    assert iv.weighted_ci_high == pytest.approx(values.mean() + half, abs=0.12 * half)
    assert iv.unweighted_ci_high - iv.unweighted_ci_low == pytest.approx(2 * half / 20, rel=0.12)


def test_paired_replicates_separate_a_small_constant_gap() -> None:
    # B is A + 0.5 on every query while queries vary a lot: the systems' own intervals overlap, but
    # the paired bootstrap says B beats A in every replicate, so they are not tied.
    base = np.random.default_rng(5).normal(70, 15, size=60)
    rows = [("A", f"q{i}", float(v), 3.0) for i, v in enumerate(base)]
    rows += [("B", f"q{i}", float(v) + 0.5, 3.0) for i, v in enumerate(base)]
    pw = pairwise_win_probability(_sources(rows), n_boot=500).set_index(["system_a", "system_b"])
    assert pw.loc[("B", "A"), "p_a_beats_b"] == 1.0
    assert pw.loc[("A", "B"), "p_a_beats_b"] == 0.0
    assert pw.loc[("B", "A"), "mean_diff"] == pytest.approx(0.5)
    assert pw.loc[("B", "A"), "diff_ci_low"] == pytest.approx(0.5)
    iv = system_intervals(_sources(rows), n_boot=500).set_index("model_name")
    assert iv.loc["A", "weighted_ci_high"] > iv.loc["B", "weighted_ci_low"]  # own intervals overlap
    assert not pw.loc[("B", "A"), "tied"] and not pw.loc[("A", "B"), "tied"]
    systems, reps = bootstrap_replicates(_sources(rows), "weighted_total_content_score", n_boot=500)
    assert tied_with(systems, reps, 0.95) == ["", ""]


def test_equal_systems_win_half_and_far_systems_are_not_tied() -> None:
    rows = [(s, f"q{i}", 50.0 + i, 3.0) for s in ("x", "y") for i in range(20)]
    rows += [("z", f"q{i}", 99.0, 5.0) for i in range(20)]
    df = _sources(rows)
    pw = pairwise_win_probability(df, n_boot=300).set_index(["system_a", "system_b"])
    assert pw.loc[("x", "y"), "p_a_beats_b"] == 0.5
    assert pw.loc[("z", "x"), "p_a_beats_b"] == 1.0
    assert not pw.loc[("z", "x"), "tied"] and pw.loc[("x", "y"), "tied"]
    systems, reps = bootstrap_replicates(df, "weighted_total_content_score", n_boot=300)
    assert tied_with(systems, reps, 0.95) == ["y", "x", ""]


def test_a_single_system_is_tied_with_nobody() -> None:
    rows = [("solo", f"q{i}", 50.0 + i, 3.0) for i in range(5)]
    systems, reps = bootstrap_replicates(_sources(rows), "weighted_total_content_score", n_boot=50)
    assert tied_with(systems, reps, 0.95) == [""]


def test_seeded_on_a_paper_sized_run() -> None:
    rng = np.random.default_rng(2)
    n = 12 * 100 * 4
    df = pd.DataFrame(
        {
            "model_name": np.repeat([f"sys{i:02d}" for i in range(12)], n // 12),
            "query_id": np.tile(np.repeat([f"q{i}" for i in range(100)], 4), 12),
            "weighted_total_content_score": rng.normal(80, 10, n),
            "unweighted_mean_score": rng.normal(4, 0.5, n),
        }
    )
    first = system_intervals(df, n_boot=1000, seed=7)
    assert len(pairwise_win_probability(df, n_boot=1000, seed=7)) == 12 * 11
    assert first.equals(system_intervals(df, n_boot=1000, seed=7))
    assert not first.equals(system_intervals(df, n_boot=1000, seed=8))
