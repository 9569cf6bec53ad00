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
from jobs.analysis.calibration import Calibration, GateThresholds, calibrate, judge_scores
from jobs.analysis.config import ReportConfig
from jobs.analysis.fewshot import fewshot_yaml, pick_fewshot
from jobs.analysis.labels import load_correctness_labels, load_human_labels, load_system_metadata
from jobs.analysis.overlap import score_vs_overlap, serp_overlap, source_overlap_flags
from jobs.analysis.report import write_report

__all__ = [
    "Calibration",
    "GateThresholds",
    "ReportConfig",
    "calibrate",
    "fewshot_yaml",
    "judge_scores",
    "load_correctness_labels",
    "load_human_labels",
    "load_system_metadata",
    "pick_fewshot",
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
