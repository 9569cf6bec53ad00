"""How complete the numbers of a report are: coverage per system, the missing-page policy, and
dimensions that do not vary (and so say nothing about the systems)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from crawler.base import RunStore
from crawler.layout import LAYOUT
from jobs.analysis.analyses import WEIGHTED, Analyses
from jobs.analysis.document import Note, Section, Table
from jobs.analysis.run_data import RunData
from judge.rubric import DIMENSIONS

#: What a missing page (not fetched, or not scored) does to a system's score, per reduce policy.
MISSING_POLICY = {
    "official": "A cited page that could not be fetched or scored counts 0 on every dimension it lacks in "
    "the weighted score (the official SourceBench policy), so low coverage lowers a system's score.",
    "complete": "Sources with any missing dimension are left out of the aggregates (policy `complete`), "
    "so a system's score is the mean over its fully scored sources only.",
}


def read_coverage(run: RunData) -> dict[str, Any] | None:
    """The audit's ``scores/coverage.json``, or None for a run made without it."""
    store = RunStore(run.uri)
    return store.read_json_if_present(LAYOUT.coverage)


def is_incomplete(coverage: dict[str, Any] | None) -> bool:
    return coverage is not None and not coverage["complete"]


def coverage_section(run: RunData, analyses: Analyses, coverage: dict[str, Any] | None) -> Section:
    """Coverage next to each system's score, the missing-page policy, and the audit's verdict."""
    blocks: list[Any] = []
    if is_incomplete(coverage):
        blocks.append(Note(coverage["diagnosis"], "warning"))
    blocks.append(Note(MISSING_POLICY.get(run.policy, MISSING_POLICY["official"])))
    if coverage is not None:
        scores = analyses.leaderboard.set_index("model_name")[WEIGHTED]
        rows = [
            {
                "System": name,
                "Weighted score": scores.get(name, float("nan")),
                "Selected sources": counts["selected"],
                "Fetched ok": counts["fetched_ok"],
                "Scored": counts["judged"],
                "Coverage %": 100.0 * counts["share"],
            }
            for name, counts in coverage["systems"].items()
        ]
        blocks.append(
            Table(
                pd.DataFrame(rows),
                caption=f"Coverage = sources fetched ok and scored on all 8 dimensions / sources selected; "
                f"the audit requires {coverage['min_share']:.0%} of every system (coverage.min_share)",
                formats={"Weighted score": "{:.2f}", "Coverage %": "{:.1f}"},
            )
        )
    status = "incomplete" if is_incomplete(coverage) else "complete" if coverage else "not measured"
    return Section("coverage", f"Coverage ({status})", "", blocks)


def constant_dimensions(sources: pd.DataFrame) -> list[str]:
    """Keys of the dimensions that have one and the same score on every scored source."""
    keys = [d.key for d in DIMENSIONS if d.key in sources]
    return [key for key in keys if sources[key].dropna().nunique() == 1]


def constant_note(constant: list[str]) -> str | None:
    """A finding that names constant dimensions as uninformative, instead of ranking them."""
    if not constant:
        return None
    labels = {d.key: d.label for d in DIMENSIONS}
    names = ", ".join(labels[key] for key in constant)
    return (
        f"Constant across all sources, so not a finding about the systems: {names} (every source got the "
        "same score; check what the judge reads for it, e.g. the pinned current date for Freshness)."
    )
