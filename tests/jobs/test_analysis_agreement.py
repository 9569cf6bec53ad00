"""Agreement statistics against hand-worked examples, a published example and independent libraries."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from jobs.analysis.agreement import (
    agreement_summary,
    krippendorff_alpha,
    mean_absolute_error,
    quadratic_weighted_kappa,
    spearman,
)

NAN = np.nan


def test_alpha_hand_worked_two_coders_three_units() -> None:
    # Units (1,1), (2,3), (3,3). Pooled values 1,1,2,3,3,3 (n = 6).
    # Interval: D_o = [(2-3)^2 + (3-2)^2] / (m_u - 1) / n = 2/6; D_e = sum over ordered value pairs of
    # squared differences / (n (n-1)) = 2 * (2*1*1 + 2*3*4 + 1*3*1) / 30 = 58/30 -> alpha = 1 - 10/58 = 24/29.
    # Ordinal (n_1=2, n_2=1, n_3=3): delta^2(2,3) = (1+3 - 2)^2 = 4, delta^2(1,2) = (3 - 1.5)^2 = 2.25,
    # delta^2(1,3) = (6 - 2.5)^2 = 12.25; D_o = 2*4/6, D_e = (4*2.25 + 12*12.25 + 6*4)/30 = 6 -> alpha = 7/9.
    data = np.array([[1, 2, 3], [1, 3, 3]], dtype=float)
    assert krippendorff_alpha(data, "interval") == pytest.approx(24 / 29)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(7 / 9)
    # Nominal: D_o = 2/6, D_e = 2*(2*1 + 2*3 + 1*3)/30 = 22/30 -> alpha = 1 - 10/22 = 6/11.
    assert krippendorff_alpha(data, "nominal") == pytest.approx(6 / 11)


def test_alpha_reproduces_krippendorffs_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
    # 12 units, missing values. Published: nominal .743, ordinal .815, interval .849, ratio .797.
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
            [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
        ]
    )
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(data, "interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(data, "ratio") == pytest.approx(0.797, abs=5e-4)


def test_alpha_perfect_agreement_and_unpairable_units() -> None:
    data = np.array([[1, 2, 5, 4, NAN], [1, 2, 5, 4, 3]], dtype=float)
    assert krippendorff_alpha(data, "interval") == 1.0
    assert np.isnan(krippendorff_alpha(np.array([[1.0, NAN], [NAN, 2.0]]), "interval"))


def test_kappa_matches_scikit_learn_on_random_integer_scores() -> None:
    rng = np.random.default_rng(4)
    for _ in range(20):
        a = rng.integers(1, 6, size=40)
        b = np.clip(a + rng.integers(-2, 3, size=40), 1, 5)
        expected = cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5])
        assert quadratic_weighted_kappa(a, b) == pytest.approx(expected, abs=1e-12)


def test_kappa_of_perfect_and_of_reversed_ratings() -> None:
    a = np.array([1, 2, 3, 4, 5], dtype=float)
    assert quadratic_weighted_kappa(a, a) == 1.0
    assert quadratic_weighted_kappa(a, a[::-1]) == pytest.approx(-1.0)


def test_missing_pairs_are_skipped_everywhere() -> None:
    a = np.array([1, 2, NAN, 4, 5, 3])
    b = np.array([2, 2, 3, NAN, 4, 3])
    assert mean_absolute_error(a, b) == pytest.approx((1 + 0 + 1 + 0) / 4)
    keep = [0, 1, 4, 5]
    assert spearman(a, b) == pytest.approx(spearmanr(a[keep], b[keep]).statistic)
    summary = agreement_summary(a, b)
    assert summary["n"] == 4
    assert summary["alpha_interval"] == pytest.approx(
        krippendorff_alpha(np.vstack([a[keep], b[keep]]), "interval")
    )
