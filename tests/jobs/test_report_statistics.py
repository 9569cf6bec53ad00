"""The report's statistics say what its numbers show: ties, small-n p-values, languages, figure bases."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from jobs.analysis.analyses import analyse, query_languages
from jobs.analysis.config import ReportConfig
from jobs.analysis.correlation import spearman_test
from jobs.analysis.run_data import RunData
from jobs.analysis.sections import build_report, findings, leaderboard_section
from judge.rubric import DIMENSION_KEYS

INTERVAL = re.compile(r"\[(-?[\d.]+), (-?[\d.]+)\]")


def sources(offsets: dict[str, float], noise: float = 0.05, queries: int = 40) -> pd.DataFrame:
    """Queries that vary a lot (hard for every system alike) and systems that differ by an offset."""
    rng = np.random.default_rng(0)
    base = rng.normal(70, 12, size=queries)
    rows = []
    for name, offset in offsets.items():
        for i, value in enumerate(base):
            weighted = float(value + offset + rng.normal(0, noise))
            rows.append(
                {
                    "model_name": name,
                    "query_id": f"q{i}",
                    "query_type": "VACOS",
                    "source_url": f"https://site{i}.example/page",
                    "weighted_total_content_score": weighted,
                    "unweighted_mean_score": weighted / 20,
                    "language": "xx",  # a page language: must not become the report's language
                    **{key: 3.0 for key in DIMENSION_KEYS},
                }
            )
    return pd.DataFrame(rows)


def leaderboard_rows(offsets: dict[str, float]) -> tuple[pd.DataFrame, list[str]]:
    config = ReportConfig(n_boot=400)
    result = analyse(RunData(uri="runs/x", sources=sources(offsets)), config)
    table = leaderboard_section(result, config, {}).blocks[0].frame
    return table, findings(result, config)


@pytest.mark.parametrize(
    "offsets",
    [
        {"A": 0.0, "B": 0.6, "C": 1.2, "D": 1.25},  # own intervals all overlap; every difference is clear
        {"A": 0.0, "B": 0.0, "C": 5.0, "D": 5.0},  # two real ties
        {"A": 0.0, "B": 0.02, "C": 0.04},  # all within noise
    ],
)
def test_tied_statements_agree_with_the_printed_difference_intervals(offsets: dict[str, float]) -> None:
    table, facts = leaderboard_rows(offsets)
    diff_column = next(c for c in table.columns if c.startswith("Difference to next"))
    tied_column = next(c for c in table.columns if c.startswith("Tied with"))
    names = table["System"].tolist()
    tied_pairs = []
    for i in range(len(names) - 1):
        low, high = map(float, INTERVAL.search(table[diff_column].iloc[i]).groups())
        includes_zero = low <= 0 <= high
        tied = names[i + 1] in str(table[tied_column].iloc[i]).split(";")
        assert tied == includes_zero, (names[i], names[i + 1], low, high, table[tied_column].iloc[i])
        if tied:
            tied_pairs.append((names[i], names[i + 1]))
    sentence = next(f for f in facts if "separated" in f)
    if tied_pairs:
        assert sentence.startswith("Not separated") and all(f"{a} ~ {b}" in sentence for a, b in tied_pairs)
    else:
        assert sentence.startswith("Every adjacent pair of systems is separated")


def test_overlapping_own_intervals_do_not_make_a_tie() -> None:
    """The demo's case: the systems' own intervals overlap, P(beats next) is 100 %: not a tie."""
    table, facts = leaderboard_rows({"A": 0.0, "B": 0.6, "C": 1.2})
    score = next(c for c in table.columns if c.startswith("Weighted score"))
    lows, highs = zip(*(map(float, INTERVAL.search(cell).groups()) for cell in table[score]), strict=True)
    assert max(lows) < min(highs)  # every pair of own intervals overlaps
    assert (table[next(c for c in table.columns if c.startswith("Tied with"))] == "–").all()
    assert any(f.startswith("Every adjacent pair of systems is separated") for f in facts)


@pytest.mark.parametrize(
    "x,y,p",
    [
        ([1, 2, 3], [3, 2, 1], 1 / 3),  # perfect inverse order of 3 systems: exact p is 2/6, not 0
        ([1, 2, 3, 4], [1, 2, 3, 4], 2 / 24),
        ([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], None),
    ],
)
def test_small_n_correlations_have_exact_p_values(x, y, p) -> None:
    from scipy.stats import permutation_test, spearmanr

    test = spearman_test(np.array(x, float), np.array(y, float))
    assert test.method == "exact"
    assert test.rho == pytest.approx(spearmanr(x, y).statistic)
    if p is None:  # against scipy's own exhaustive permutation test
        p = permutation_test(
            (np.array(x, float),),
            lambda a: spearmanr(a, y).statistic,
            permutation_type="pairings",
            n_resamples=np.inf,
        ).pvalue
    assert test.p_value == pytest.approx(p)


def test_too_few_points_give_no_p_value_and_many_use_the_approximation() -> None:
    assert spearman_test(np.array([1.0, 2.0]), np.array([2.0, 1.0])).method == "none"
    assert np.isnan(spearman_test(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])).p_value)
    x = np.arange(30, dtype=float)
    assert spearman_test(x, x[::-1]).method == "asymptotic"


def test_the_language_is_the_questions_and_failed_pages_are_no_language() -> None:
    frame = sources({"A": 0.0, "B": 1.0}, queries=4)
    frame.loc[frame["query_id"] == "q3", "language"] = None  # a failed page: no detected language
    queries = pd.DataFrame({"query_id": ["q0", "q1", "q2", "q3"], "language": ["de", "de", "fr", "fr"]})
    run = RunData(uri="runs/x", sources=frame, queries=queries)
    assert query_languages(run).tolist() == ["de", "de", "fr", "fr"] * 2
    result = analyse(run, ReportConfig(n_boot=50))
    means, counts = result.by_language
    assert set(means.columns) == {"de", "fr", "all"}  # neither "xx" (pages) nor "unknown" (failed)
    assert counts.loc["A", "fr"] == 2


def test_without_query_languages_there_is_no_language_breakdown() -> None:
    result = analyse(
        RunData(uri="runs/x", sources=sources({"A": 0.0, "B": 1.0}, queries=5)), ReportConfig(n_boot=50)
    )
    assert result.by_language is None
    assert "no per-language breakdown" in result.notes["language"][0][0]


def test_every_figure_names_what_it_is_computed_on() -> None:
    config = ReportConfig(n_boot=50)
    run = RunData(uri="runs/x", sources=sources({"A": 0.0, "B": 1.0, "C": 2.0}, queries=6))
    report = build_report(run, analyse(run, config), config)
    figures = [
        block for section in report.sections for block in section.blocks if type(block).__name__ == "Figure"
    ]
    assert len(figures) >= 4
    for figure in figures:
        assert figure.caption.startswith("Computed on "), (figure.key, figure.caption)
