"""Agreement statistics between two raters (judge vs human, annotator vs annotator) on 1-5 scores.

Implemented here rather than imported so that every statistic is defined in one place and handles
missing values the same way: a pair counts only when both raters scored the item.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"raters must score the same items: shapes {a.shape} and {b.shape}")
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def mean_absolute_error(a: np.ndarray, b: np.ndarray) -> float:
    """Mean |a - b| over the items both raters scored (NaN when there are none)."""
    a, b = _paired(a, b)
    return float(np.abs(a - b).mean()) if a.size else float("nan")


def quadratic_weighted_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa with quadratic weights on an equally spaced scale (the 1-5 rubric).

    With weights ``(i - j)^2`` the observed disagreement is the sum of squared differences of the
    pairs and the chance disagreement is the same sum over all cross pairs (the product of the two
    marginals), so ``kappa = 1 - n * sum((a - b)^2) / sum_i sum_j (a_i - b_j)^2``. This equals
    scikit-learn's ``cohen_kappa_score(weights="quadratic", labels=[1, 2, 3, 4, 5])`` for integer
    scores and extends to averaged (non-integer) scores. NaN when undefined (no spread at all).
    """
    a, b = _paired(a, b)
    if a.size == 0:
        return float("nan")
    observed = a.size * np.square(a - b).sum()
    expected = np.square(a[:, None] - b[None, :]).sum()
    return float(1.0 - observed / expected) if expected > 0 else float("nan")


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation of the paired items (NaN when either rater is constant)."""
    a, b = _paired(a, b)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from scipy.stats import spearmanr  # scipy.stats takes ~1 s to import: only when needed

        return float(spearmanr(a, b).statistic)


def krippendorff_alpha(reliability: np.ndarray, level: AlphaLevel = "interval") -> float:
    """Krippendorff's alpha for any number of coders, with missing values.

    Args:
        reliability: ``(coders, units)`` array of values, NaN where a coder did not rate a unit.
        level: The metric of the difference function: ``nominal``, ``ordinal`` (ranks of the
            pooled values), ``interval`` (squared difference) or ``ratio``.

    Returns:
        ``1 - D_o / D_e`` computed from the coincidence matrix (Krippendorff 2011, "Computing
        Krippendorff's alpha-reliability"); units with fewer than two values are not pairable and
        are dropped. NaN when fewer than two pairable values or no expected disagreement.
    """
    data = np.asarray(reliability, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError("reliability data must be a (coders, units) matrix")
    present = ~np.isnan(data)
    pairable = present.sum(axis=0) >= 2
    data, present = data[:, pairable], present[:, pairable]
    if not present.any():
        return float("nan")
    values, codes = np.unique(data[present], return_inverse=True)
    unit_of = np.nonzero(present)[1]
    counts = np.zeros((data.shape[1], values.size))  # n_uc: how often unit u got value c
    np.add.at(counts, (unit_of, codes), 1.0)
    m_u = counts.sum(axis=1)
    scaled = counts / (m_u - 1.0)[:, None]
    coincidence = counts.T @ scaled - np.diag(scaled.sum(axis=0))  # o_ck
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    delta = _difference_matrix(values, n_c, level)
    observed = (coincidence * delta).sum() / n
    expected = (np.outer(n_c, n_c) * delta).sum() / (n * (n - 1.0))
    return float(1.0 - observed / expected) if expected > 0 else float("nan")


def _difference_matrix(values: np.ndarray, n_c: np.ndarray, level: AlphaLevel) -> np.ndarray:
    """Squared difference ``delta^2(c, k)`` between the pooled values under one metric."""
    if level == "nominal":
        return 1.0 - np.eye(values.size)
    if level == "interval":
        return np.square(values[:, None] - values[None, :])
    if level == "ratio":
        total = values[:, None] + values[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nan_to_num(np.square((values[:, None] - values[None, :]) / total))
    if level == "ordinal":
        # delta(c, k) = sum of n_g for g from c to k, minus half of n_c and n_k.
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        lo = np.minimum.outer(np.arange(values.size), np.arange(values.size))
        hi = np.maximum.outer(np.arange(values.size), np.arange(values.size))
        between = cum[hi + 1] - cum[lo]
        return np.square(between - (n_c[:, None] + n_c[None, :]) / 2.0)
    raise ValueError(f"unknown alpha level {level!r}")


def agreement_summary(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """All two-rater statistics of one dimension: n, MAE, QWK, Spearman, alpha (ordinal, interval)."""
    pa, pb = _paired(a, b)
    pair = np.vstack([pa, pb])
    return {
        "n": int(pa.size),
        "mae": mean_absolute_error(pa, pb),
        "qwk": quadratic_weighted_kappa(pa, pb),
        "spearman": spearman(pa, pb),
        "alpha_ordinal": krippendorff_alpha(pair, "ordinal"),
        "alpha_interval": krippendorff_alpha(pair, "interval"),
    }
