"""``write_report``: read a run, compute its analyses, write the HTML and Markdown reports and tables.

Outputs (under ``<run>/leaderboard/``):

* ``report.html``: self-contained (inline CSS, figures as base64 PNG, no script, no external URL);
* ``report.md`` plus ``figures/<key>.png`` (the same figures as files);
* ``analysis/*.csv``: every table behind the report (documented in docs/report.md).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from crawler.base import RunStore
from crawler.layout import LAYOUT
from jobs.analysis.analyses import Analyses, analyse, effective_config
from jobs.analysis.config import ReportConfig
from jobs.analysis.document import Figure, Report
from jobs.analysis.render_html import render_html
from jobs.analysis.render_markdown import render_markdown
from jobs.analysis.run_data import load_run
from jobs.analysis.sections import build_report


def analysis_tables(analyses: Analyses) -> dict[str, pd.DataFrame]:
    """The tables behind the report, by file stem (``analysis/<stem>.csv``)."""
    tables: dict[str, pd.DataFrame | None] = {
        "leaderboard_intervals": analyses.leaderboard,
        "pairwise_win_probability": analyses.pairwise,
        "dimension_means": analyses.dimension_means.rename_axis("model_name").reset_index(),
        "dimension_correlations": analyses.correlations.rename_axis("dimension").reset_index(),
        "by_query_type": analyses.by_query_type[0].reset_index(),
        "by_language": analyses.by_language[0].reset_index() if analyses.by_language else None,
        "top_domains": analyses.domains,
        "serp_overlap": analyses.overlap_joined,
        "score_vs_overlap": analyses.overlap_stats,
        "score_by_serp_presence": analyses.overlap_split,
        "correctness_correlations": analyses.correctness,
        "crawl_funnel": analyses.funnel,
        "crawl_statuses": analyses.statuses,
        "crawl_failure_reasons": analyses.failures,
        "judge_usage": analyses.usage,
        "manipulation_by_system": analyses.manipulation,
    }
    for name, table in analyses.ablations.items():
        tables["ablation_" + name.replace(" x ", "_x_").replace(" ", "_")] = table.reset_index()
    return {name: table for name, table in tables.items() if table is not None}


def _figures(report: Report) -> list[Figure]:
    return [block for section in report.sections for block in section.blocks if isinstance(block, Figure)]


def write_report(
    run_uri: str,
    serp_systems: list[str] | None = None,
    config: ReportConfig | None = None,
    **overrides: Any,
) -> dict[str, str]:
    """Write the report of a run.

    Args:
        run_uri: The run directory (local path or ``s3://bucket/prefix/run``).
        serp_systems: Systems whose citations are search-engine results (overrides ``config``).
        config: Report settings; defaults to :class:`ReportConfig` defaults.
        **overrides: Any :class:`ReportConfig` field, e.g. ``n_boot=2000``.

    Returns:
        Written file name (relative to ``leaderboard/``) -> its URI.
    """
    settings = (config or ReportConfig()).model_dump()
    settings.update(overrides)
    if serp_systems is not None:
        settings["serp_systems"] = list(serp_systems)
    config = ReportConfig.model_validate(settings)
    run = load_run(run_uri)
    config = effective_config(run, config)
    analyses = analyse(run, config)
    report = build_report(run, analyses, config)
    store = RunStore(run_uri)
    written: dict[str, str] = {}

    def put(name: str, data: bytes | str) -> None:
        relpath = LAYOUT.leaderboard_file(name)
        if isinstance(data, str):
            store.write_text(relpath, data)
        else:
            store.write_bytes(relpath, data)
        written[name] = store.uri_of(relpath)

    for name, table in analysis_tables(analyses).items():
        put(f"analysis/{name}.csv", table.to_csv(index=False))
    for figure in _figures(report):
        put(f"figures/{figure.key}.png", figure.png)
    put("report.md", render_markdown(report, "figures"))
    put("report.html", render_html(report))
    return written
