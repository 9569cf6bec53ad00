"""The SourceBench rubric: 8 dimensions in 3 stages, their weights, and the weighted-total formula.

Defined once here and used by the prompts, the parser, the reduce weights and the reports.
"""

from __future__ import annotations

from dataclasses import dataclass

RUBRIC_VERSION = "sb-rubric-1"

#: Stages in request order; each stage is one judge request per (page, query).
STAGES = ("content", "meta", "layout")


@dataclass(frozen=True)
class Dimension:
    """One scored dimension of a cited page."""

    key: str
    """Column name, as in the official ``content_vector``."""
    code: str
    """The paper's two-letter abbreviation."""
    label: str
    """Human-readable name for reports."""
    stage: str
    """Which stage prompt scores it (one of ``STAGES``)."""
    weight: int
    """Weight in the weighted total (3 for content dimensions, 2 otherwise)."""


#: In the official ``SCORE_KEYS`` order (compute_metrics.py), which the output columns follow.
DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("semantic_relevance", "CR", "Semantic relevance", "content", 3),
    Dimension("factual_accuracy", "FA", "Factual accuracy", "content", 3),
    Dimension("freshness", "FR", "Freshness", "meta", 2),
    Dimension("objectivity_tone", "NE", "Objectivity / tone", "content", 3),
    Dimension("layout_ad_density", "LC", "Layout / ad density", "layout", 2),
    Dimension("accountability", "AA", "Author accountability", "meta", 2),
    Dimension("transparency", "OA", "Ownership transparency", "meta", 2),
    Dimension("authority", "DA", "Domain authority", "meta", 2),
)

DIMENSION_KEYS: tuple[str, ...] = tuple(d.key for d in DIMENSIONS)
WEIGHTS: dict[str, int] = {d.key: d.weight for d in DIMENSIONS}
#: The official scale factor: sum of weights is 19, so a page scored 5 everywhere gives 95 x 100/95 = 100.
WEIGHTED_SCALE = 100.0 / 95.0
SCORE_MIN, SCORE_MAX = 1, 5


def stage_dimensions(stage: str) -> tuple[Dimension, ...]:
    """The dimensions one stage prompt scores, in output order."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {STAGES}")
    return tuple(d for d in DIMENSIONS if d.stage == stage)
