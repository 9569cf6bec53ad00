"""Analysis of a run: bootstrap intervals, SERP overlap, dimension statistics, calibration, the report."""

from jobs.analysis.agreement import (
    agreement_summary,
    krippendorff_alpha,
    mean_absolute_error,
    quadratic_weighted_kappa,
    spearman,
)
from jobs.analysis.bootstrap import (
    bootstrap_replicates,
    pairwise_win_probability,
    percentile_interval,
    replicate_means,
    system_intervals,
    tied_with,
)
from jobs.analysis.config import ReportConfig
from jobs.analysis.overlap import score_vs_overlap, serp_overlap, source_overlap_flags
from jobs.analysis.report import write_report

__all__ = [
    "ReportConfig",
    "agreement_summary",
    "bootstrap_replicates",
    "krippendorff_alpha",
    "mean_absolute_error",
    "pairwise_win_probability",
    "percentile_interval",
    "quadratic_weighted_kappa",
    "replicate_means",
    "score_vs_overlap",
    "serp_overlap",
    "source_overlap_flags",
    "spearman",
    "system_intervals",
    "tied_with",
    "write_report",
]
