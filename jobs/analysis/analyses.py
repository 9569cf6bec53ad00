"""Compute every analysis of a run's report from its tables (no rendering here)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from jobs.analysis.bootstrap import pairwise_win_probability, system_intervals, tied_from_pairwise
from jobs.analysis.config import ReportConfig
from jobs.analysis.dimensions import (
    ablation_table,
    breakdown,
    correctness_correlations,
    dimension_correlations,
    factor_means,
    per_dimension_means,
    top_domains,
)
from jobs.analysis.labels import (
    load_correctness_labels,
    load_system_metadata,
    serp_systems_from_collect,
    system_metadata_from_collect,
)
from jobs.analysis.manipulation import manipulation_by_system
from jobs.analysis.overlap import score_by_overlap, score_vs_overlap, serp_overlap, source_overlap_flags
from jobs.analysis.run_data import RunData
from jobs.analysis.run_summary import failure_reasons, funnel, judge_usage, page_statuses

WEIGHTED = "weighted_total_content_score"
UNWEIGHTED = "unweighted_mean_score"
INTERVAL_COLUMNS = ["weighted_ci_low", "weighted_ci_high", "unweighted_ci_low", "unweighted_ci_high"]


@dataclass
class Analyses:
    """Results of every analysis; a None field means its input was absent (see ``notes``)."""

    leaderboard: pd.DataFrame
    """Overall table in rank order with ``rank``, interval columns and ``weighted_tied_with`` (the systems
    whose paired difference interval to this one includes 0, from ``pairwise``)."""
    intervals_source: str
    """``reduce`` when the intervals came from leaderboard_overall, ``report`` when computed here."""
    pairwise: pd.DataFrame
    dimension_means: pd.DataFrame
    correlations: pd.DataFrame
    by_query_type: tuple[pd.DataFrame, pd.DataFrame]
    domains: pd.DataFrame
    """The most cited registered domains (``dimensions.top_domains``)."""
    by_language: tuple[pd.DataFrame, pd.DataFrame] | None = None
    overlap: pd.DataFrame | None = None
    overlap_joined: pd.DataFrame | None = None
    overlap_stats: pd.DataFrame | None = None
    overlap_split: pd.DataFrame | None = None
    ablations: dict[str, pd.DataFrame] = field(default_factory=dict)
    correctness: pd.DataFrame | None = None
    funnel: pd.DataFrame | None = None
    statuses: pd.DataFrame | None = None
    failures: pd.DataFrame | None = None
    usage: pd.DataFrame | None = None
    manipulation: pd.DataFrame | None = None
    """Per system: sources whose page was flagged for manipulation (``manipulation_by_system``)."""
    notes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Section id -> ``(text, kind)`` explanations of what is missing or was skipped."""

    def note(self, section: str, text: str, kind: str = "info") -> None:
        self.notes.setdefault(section, []).append((text, kind))


def overall_from_sources(sources: pd.DataFrame) -> pd.DataFrame:
    """The overall table's core columns computed from sources (for runs without leaderboard_overall)."""
    grouped = sources.groupby(sources["model_name"].astype(str))
    table = pd.DataFrame(
        {
            "num_sources": grouped.size(),
            "num_queries": grouped["query_id"].nunique(),
            UNWEIGHTED: grouped[UNWEIGHTED].mean(),
            WEIGHTED: grouped[WEIGHTED].mean(),
        }
    )
    if "score_complete" in sources:
        table.insert(2, "num_complete_scores", grouped["score_complete"].sum().astype(int))
    return table.rename_axis("model_name").reset_index()


def ranked_leaderboard(run: RunData, config: ReportConfig) -> tuple[pd.DataFrame, str]:
    """Overall table with intervals (the reduce's when present, else bootstrapped here), in rank order."""
    table = run.overall.copy() if run.overall is not None else overall_from_sources(run.sources)
    table["model_name"] = table["model_name"].astype(str)
    source = "reduce"
    if not set(INTERVAL_COLUMNS) <= set(table.columns) or table[INTERVAL_COLUMNS].isna().all().all():
        intervals = system_intervals(run.sources, config.n_boot, config.seed, config.confidence_level)
        table = table.drop(columns=[c for c in INTERVAL_COLUMNS if c in table]).merge(
            intervals, on="model_name", how="left"
        )
        source = "report"
    table = table.sort_values([WEIGHTED, "model_name"], ascending=[False, True], kind="stable")
    table.insert(0, "rank", range(1, len(table) + 1))
    return table.reset_index(drop=True), source


def query_languages(run: RunData) -> pd.Series | None:
    """The language each source's question was asked in, aligned with ``run.sources`` (None: unknown).

    The answer's language tag from the citations (a multilingual sweep), else the query's from the
    queries file; never the page's detected language.
    """
    keys = pd.MultiIndex.from_arrays(
        [run.sources["model_name"].astype(str), run.sources["query_id"].astype(str)]
    )
    found = pd.Series(pd.NA, index=run.sources.index, dtype="string")
    if run.citations is not None and "language" in run.citations:
        tags = run.citations.dropna(subset=["language"])
        by_answer = tags.groupby([tags["system"].astype(str), tags["query_id"].astype(str)])[
            "language"
        ].first()
        found = pd.Series(by_answer.reindex(keys).to_numpy(), index=run.sources.index, dtype="string")
    if run.queries is not None and "language" in run.queries:
        tagged = run.queries.dropna(subset=["language"])
        by_query = dict(zip(tagged["query_id"].astype(str), tagged["language"], strict=True))
        found = found.fillna(run.sources["query_id"].astype(str).map(by_query).astype("string"))
    found = found.replace("", pd.NA)
    return found if found.notna().any() else None


def _overlap(run: RunData, config: ReportConfig, result: Analyses) -> None:
    if not config.serp_systems:
        result.note(
            "overlap",
            "No SERP system given: pass --serp-system NAME (a system whose citations are a search engine's "
            "ranked results) to measure how many sources each system shares with the search engine.",
        )
        return
    if run.citations is not None:
        cited = run.citations
    else:
        cited = run.sources.rename(columns={"model_name": "system", "source_url": "url"})
        result.note("overlap", "No citations table in the run: overlap computed from the scored sources.")
    present = set(cited["system"].astype(str))
    serps = [s for s in config.serp_systems if s in present]
    for missing in sorted(set(config.serp_systems) - present):
        result.note("overlap", f"SERP system {missing!r} has no citations in this run; skipped.", "warning")
    if not serps:
        return
    result.overlap = serp_overlap(cited, serps, config.serp_top_k)
    result.overlap_joined, result.overlap_stats = score_vs_overlap(result.overlap, result.leaderboard)
    flags = source_overlap_flags(cited, serps[0], config.serp_top_k)
    result.overlap_split = score_by_overlap(flags, run.sources)


def _metadata_analyses(run: RunData, config: ReportConfig, result: Analyses) -> None:
    metadata = None
    if config.system_metadata:
        metadata = load_system_metadata(config.system_metadata)
    elif run.collect_manifest is not None:
        metadata = system_metadata_from_collect(run.collect_manifest)
        if metadata is not None:
            result.note("ablation", "System factors from the collect run's system definitions.")
    if metadata is not None:
        factors = [c for c in metadata.columns if c != "system"]
        pairs = config.ablations or ([(factors[0], factors[1])] if len(factors) >= 2 else [])
        for rows, columns in pairs:
            result.ablations[f"{rows} x {columns}"] = ablation_table(run.sources, metadata, rows, columns)
        if not pairs:
            result.ablations[factors[0]] = factor_means(run.sources, metadata, factors[0])
    else:
        result.note(
            "ablation",
            "No system metadata given: pass --system-metadata systems.csv (system,model,retrieval_tool) to "
            "tabulate scores by system factors, as in the paper's model x retrieval-tool ablation.",
        )
    if config.correctness_labels:
        result.correctness = correctness_correlations(
            run.sources, load_correctness_labels(config.correctness_labels)
        )
    else:
        result.note(
            "correctness",
            "No answer-correctness labels given: pass --correctness labels.csv (system,query_id,correct) to "
            "correlate each dimension with answer accuracy.",
        )


def _crawl_and_judge(run: RunData, config: ReportConfig, result: Analyses) -> None:
    result.funnel = funnel(run.citations, run.pages, run.judgments, run.sources)
    if run.pages is not None and len(run.pages):
        result.statuses = page_statuses(run.pages)
        result.failures = failure_reasons(run.pages)
        result.manipulation = manipulation_by_system(run.sources, run.pages)
    else:
        result.note(
            "crawl", "This run has no page records (pages/): the crawl funnel shows the leaderboard only."
        )
    if run.judgments is not None and len(run.judgments):
        result.usage = judge_usage(run.judgments, config.prices)
    else:
        result.note("judge", "This run has no judgment records (judgments/): no token or cost summary.")


def effective_config(run: RunData, config: ReportConfig) -> ReportConfig:
    """The settings, with SERP systems taken from the collect manifest when none were given."""
    if not config.serp_systems and run.collect_manifest is not None:
        serps = serp_systems_from_collect(run.collect_manifest)
        if serps:
            return config.model_copy(update={"serp_systems": serps})
    return config


def analyse(run: RunData, config: ReportConfig) -> Analyses:
    """Run every analysis the inputs allow (``config`` as returned by :func:`effective_config`)."""
    leaderboard, source = ranked_leaderboard(run, config)
    pairwise = pairwise_win_probability(
        run.sources, WEIGHTED, config.n_boot, config.seed, config.confidence_level
    )
    # "tied" follows the paired difference intervals the report prints, whoever computed the others
    leaderboard["weighted_tied_with"] = tied_from_pairwise(pairwise, leaderboard["model_name"].tolist())
    result = Analyses(
        leaderboard=leaderboard,
        intervals_source=source,
        pairwise=pairwise,
        dimension_means=per_dimension_means(run.sources),
        correlations=dimension_correlations(run.sources),
        by_query_type=breakdown(run.sources, "query_type", min_sources=config.min_cell_sources),
        domains=top_domains(run.sources),
    )
    languages = query_languages(run)
    if languages is not None and languages.notna().any():
        tagged = run.sources.assign(language=languages)[languages.notna()]
        result.by_language = breakdown(tagged, "language", min_sources=config.min_cell_sources)
        untagged = int(languages.isna().sum())
        if untagged:
            result.note("language", f"{untagged:,} sources of queries without a language tag are left out.")
    else:
        result.note(
            "language",
            "The queries carry no language tag (a `language` column in the queries CSV, or a collect "
            "sweep): no per-language breakdown. A page's detected language is not used: a failed page "
            "has none, and a page's language is not the question's.",
        )
    _overlap(run, config, result)
    _metadata_analyses(run, config, result)
    _crawl_and_judge(run, config, result)
    return result
