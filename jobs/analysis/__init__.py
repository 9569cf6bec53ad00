"""Analysis of a run: bootstrap intervals, SERP overlap, dimension statistics, calibration, the report."""

from jobs.analysis.bootstrap import (
    bootstrap_replicates,
    pairwise_win_probability,
    percentile_interval,
    replicate_means,
    system_intervals,
    tied_with,
)

__all__ = [
    "bootstrap_replicates",
    "pairwise_win_probability",
    "percentile_interval",
    "replicate_means",
    "system_intervals",
    "tied_with",
]
