"""Analysis of a run: bootstrap intervals, SERP overlap, dimension statistics, calibration, the report.

Names are imported on first use (PEP 562), so ``from jobs.analysis import system_intervals`` in the
reduce does not pay for matplotlib and scipy, which only the report and the statistics need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Modules searched for a public name, cheapest first (bootstrap needs numpy and pandas only).
_MODULES = ("bootstrap", "config", "agreement", "labels", "overlap", "calibration", "fewshot", "report")

__all__ = [
    "Calibration",
    "GateThresholds",
    "ReportConfig",
    "agreement_summary",
    "bootstrap_replicates",
    "calibrate",
    "fewshot_yaml",
    "judge_scores",
    "krippendorff_alpha",
    "load_correctness_labels",
    "load_human_labels",
    "load_system_metadata",
    "mean_absolute_error",
    "pairwise_win_probability",
    "percentile_interval",
    "pick_fewshot",
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

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name in __all__:
        for module in _MODULES:
            found = importlib.import_module(f"jobs.analysis.{module}")
            if hasattr(found, name):
                value = getattr(found, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'jobs.analysis' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
