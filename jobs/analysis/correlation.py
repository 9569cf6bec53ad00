"""Correlation tests that stay honest with few points: exact permutation p-values for small n.

scipy's Spearman p-value uses a t approximation that is badly wrong with a handful of points (three
systems in perfect inverse order get p = 0; the exact two-sided p is 1/3). Up to
:data:`EXACT_MAX_N` points every ordering is enumerated; above it the approximation is used.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np

#: Largest n whose p-value is computed by enumerating all n! orderings (9! = 362,880).
EXACT_MAX_N = 9
#: Fewest points for a correlation at all.
MIN_N = 3


@dataclass(frozen=True)
class CorrelationTest:
    """A rank correlation, its two-sided p-value and how the p-value was obtained."""

    rho: float
    p_value: float
    method: str
    """``exact`` (all orderings), ``asymptotic`` (t approximation) or ``none`` (too few points)."""


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def _pearson_rows(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    xc = x - x.mean()
    yc = ys - ys.mean(axis=-1, keepdims=True)
    return (yc @ xc) / (np.sqrt((xc**2).sum()) * np.sqrt((yc**2).sum(axis=-1)))


def spearman_test(x: np.ndarray, y: np.ndarray) -> CorrelationTest:
    """Spearman's rho of paired values with a two-sided p-value (exact for n <= EXACT_MAX_N).

    The exact p-value is the share of all orderings of ``y``'s ranks whose |rho| is at least the
    observed |rho| (ties keep their average ranks). Fewer than :data:`MIN_N` points, or a constant
    variable, give NaN and method ``none``.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = len(x)
    if n < MIN_N or np.ptp(x) == 0 or np.ptp(y) == 0:
        return CorrelationTest(math.nan, math.nan, "none")
    rx, ry = _ranks(x), _ranks(y)
    rho = float(_pearson_rows(rx, ry[None, :])[0])
    if n <= EXACT_MAX_N:
        orderings = np.array(list(itertools.permutations(ry)))
        null = _pearson_rows(rx, orderings)
        p = float(np.mean(np.abs(null) >= abs(rho) - 1e-12))
        return CorrelationTest(rho, p, "exact")
    from scipy.stats import t as student_t

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stat = rho * math.sqrt((n - 2) / max(1e-300, 1.0 - rho * rho))
        p = float(2 * student_t.sf(abs(stat), n - 2))
    return CorrelationTest(rho, min(1.0, p), "asymptotic")
