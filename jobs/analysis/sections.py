"""Turn the analyses of a run into report sections (tables, figures, notes), in reading order."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from jobs.analysis import figures
from jobs.analysis.analyses import UNWEIGHTED, WEIGHTED, Analyses
from jobs.analysis.completeness import (
    constant_dimensions,
    constant_note,
    coverage_section,
    is_incomplete,
    read_coverage,
)
from jobs.analysis.config import ReportConfig
from jobs.analysis.document import Bullets, Code, Note, Report, Section, Table, with_interval
from jobs.analysis.run_data import RunData
from jobs.schemas import QUERY_TYPES
from judge.rubric import DIMENSIONS, RUBRIC_VERSION

PCT = "{:.1f}"
USAGE_LABELS = {
    "prompt_layout": "layout",
    "prompt_tokens": "prompt tokens",
    "cached_prompt_tokens": "cached prompt tokens",
    "output_tokens": "output tokens",
    "cache_hit_pct": "cache hit %",
    "latency_s_mean": "mean latency (s)",
    "cost_usd": "cost (USD)",
}
COUNT_LABELS = ("requests", "scored", "unscorable", "error", "skipped", "truncated")
INT = "{:,.0f}"


def _notes(analyses: Analyses, key: str) -> list[Note]:
    return [Note(text, kind) for text, kind in analyses.notes.get(key, [])]


def _beats_next(analyses: Analyses) -> list[float]:
    """P(system at rank i beats the system at rank i + 1), NaN for the last."""
    pairs = analyses.pairwise.set_index(["system_a", "system_b"])["p_a_beats_b"]
    names = analyses.leaderboard["model_name"].tolist()
    return [float(pairs.get((a, b), float("nan"))) for a, b in zip(names, names[1:], strict=False)] + [
        float("nan")
    ]


def _difference_to_next(analyses: Analyses) -> list[str]:
    """The paired difference to the system ranked just below, with its interval ("" for the last)."""
    pairs = analyses.pairwise.set_index(["system_a", "system_b"])
    names = analyses.leaderboard["model_name"].tolist()
    cells = []
    for a, b in zip(names, names[1:], strict=False):
        if (a, b) not in pairs.index:
            cells.append("")
            continue
        row = pairs.loc[(a, b)]
        cells.append(with_interval(row["mean_diff"], row["diff_ci_low"], row["diff_ci_high"]))
    return [*cells, ""]


def _tie_groups(leaderboard: pd.DataFrame) -> list[str]:
    """``a ~ b ~ c`` for each run of consecutive systems whose paired difference interval includes 0."""
    groups, current = [], []
    for name, tied in zip(leaderboard["model_name"], leaderboard["weighted_tied_with"], strict=True):
        if current and current[-1] in str(tied).split(";"):
            current.append(name)
        else:
            if len(current) > 1:
                groups.append(" ~ ".join(current))
            current = [name]
    if len(current) > 1:
        groups.append(" ~ ".join(current))
    return groups


def findings(analyses: Analyses, config: ReportConfig, constant: list[str] | None = None) -> list[str]:
    """The headline facts of the run, one sentence each; ``constant`` dimensions are not ranked."""
    lb = analyses.leaderboard
    level = f"{config.confidence_level:.0%}"
    top, last = lb.iloc[0], lb.iloc[-1]
    items = [
        f"{top['model_name']} ranks first with a weighted score of "
        f"{with_interval(top[WEIGHTED], top['weighted_ci_low'], top['weighted_ci_high'])}"
        + (f"; {last['model_name']} ranks last with {last[WEIGHTED]:.2f}." if len(lb) > 1 else ".")
    ]
    if len(lb) > 1:
        groups = _tie_groups(lb)
        items.append(
            f"Not separated by the data (the {level} interval of their paired difference includes 0): "
            f"{'; '.join(groups)}."
            if groups
            else f"Every adjacent pair of systems is separated: the {level} interval of each paired "
            "difference excludes 0."
        )
    means = analyses.dimension_means.mean().drop(constant or [], errors="ignore")
    labels = {d.key: d.label for d in DIMENSIONS}
    if note := constant_note(constant or []):
        items.append(note)
    if means.notna().any():
        items.append(
            f"Strongest dimension across systems: {labels[means.idxmax()]} ({means.max():.2f} of 5); "
            f"weakest: {labels[means.idxmin()]} ({means.min():.2f})."
        )
    corr = analyses.correlations.where(~np.eye(len(analyses.correlations), dtype=bool))
    if corr.notna().any().any():
        a, b = corr.stack().idxmax()
        items.append(
            f"Most correlated dimensions: {labels[a]} and {labels[b]} (Spearman {corr.loc[a, b]:.2f})."
        )
    if analyses.overlap_stats is not None and len(analyses.overlap_stats):
        url = analyses.overlap_stats[analyses.overlap_stats["level"] == "url"].iloc[0]
        if not np.isnan(url["spearman_rho"]):
            direction = (
                "inverse, as in the paper" if url["spearman_rho"] < 0 else "positive, unlike the paper"
            )
            p = (
                f"{url['p_method']} p = {url['spearman_p']:.2g}"
                if url.get("p_method") in ("exact", "asymptotic")
                else "no p-value"
            )
            items.append(
                f"Score vs URL overlap with {url['serp_system']} across {url['n_systems']} systems: Spearman "
                f"{url['spearman_rho']:.2f}, {p} ({direction})."
            )
    if analyses.statuses is not None:
        statuses = analyses.statuses.set_index("status")["pages"]
        ok, total = int(statuses.get("ok", 0)), int(statuses.sum())
        failures = statuses.drop("ok", errors="ignore")
        worst = f"; most frequent failure: {failures.idxmax()} ({failures.max():,})" if len(failures) else ""
        items.append(f"{ok:,} of {total:,} pages fetched ({100.0 * ok / max(total, 1):.1f} %){worst}.")
    if analyses.usage is not None:
        total = analyses.usage.iloc[-1]
        hit = total["cache_hit_pct"]
        items.append(
            f"{int(total['scored']):,} of {int(total['requests']):,} judge requests scored"
            + (f"; the prefix cache served {hit:.0f} % of prompt tokens." if not np.isnan(hit) else ".")
        )
    return items


def leaderboard_section(analyses: Analyses, config: ReportConfig, colors: dict) -> Section:
    lb = analyses.leaderboard
    level = f"{config.confidence_level:.0%}"
    serps = set(config.serp_systems)
    table = pd.DataFrame(
        {
            "Rank": lb["rank"],
            "System": lb["model_name"],
            **({"Kind": lb["model_name"].map(lambda n: "SERP" if n in serps else "")} if serps else {}),
            f"Weighted score (0-100) [{level} CI]": [
                with_interval(v, lo, hi)
                for v, lo, hi in zip(lb[WEIGHTED], lb["weighted_ci_low"], lb["weighted_ci_high"], strict=True)
            ],
            f"Unweighted mean (1-5) [{level} CI]": [
                with_interval(v, lo, hi, digits=3)
                for v, lo, hi in zip(
                    lb[UNWEIGHTED], lb["unweighted_ci_low"], lb["unweighted_ci_high"], strict=True
                )
            ],
            f"Difference to next [{level} CI]": _difference_to_next(analyses),
            "P(beats next)": _beats_next(analyses),
            "Sources": lb["num_sources"],
            "Queries": lb["num_queries"],
            **({"Complete": lb["num_complete_scores"]} if "num_complete_scores" in lb else {}),
            "Tied with (difference CI includes 0)": lb["weighted_tied_with"].replace("", "–"),
        }
    )
    origin = "the reduce (leaderboard_overall)" if analyses.intervals_source == "reduce" else "this report"
    blocks = [
        Table(table, formats={"P(beats next)": "{:.0%}", "Sources": INT, "Queries": INT, "Complete": INT}),
        figures.leaderboard_intervals(lb, colors, config.confidence_level),
        Note(
            f"Intervals: percentile bootstrap over queries ({config.n_boot} replicates, seed {config.seed}), "
            f"computed by {origin}. 'Difference to next' is the weighted score minus that of the system "
            "ranked just below, with the interval of that difference over paired replicates (every "
            f"system scored on the same resampled queries, {config.n_boot} replicates, seed "
            f"{config.seed}); two systems are listed as tied when the interval of their paired "
            "difference includes 0. Their own intervals may overlap while the difference is clear: "
            "queries that are hard for one system are hard for the other too. 'P(beats next)' is the "
            "share of paired replicates in which a system scores above the system ranked just below it."
        ),
    ]
    if len(lb) >= 2:
        order = lb["model_name"].tolist()
        blocks.append(figures.win_probability_matrix(analyses.pairwise, order))
    return Section(
        "leaderboard",
        "Leaderboard",
        "Each system's score is the mean over its cited sources of the weighted total (content "
        "dimensions x3, "
        "others x2, scaled so that all-5 = 100) and of the unweighted mean of the 8 dimensions.",
        blocks,
    )


def dimensions_section(analyses: Analyses, colors: dict) -> Section:
    order = analyses.leaderboard["model_name"].tolist()
    means = analyses.dimension_means.reindex(order)
    means.columns = [f"{d.code} {d.label}" for d in DIMENSIONS]
    means.index.name = "System"
    return Section(
        "dimensions",
        "Scores per dimension",
        "Mean 1-5 score of each system's sources on each rubric dimension (best per dimension in bold).",
        [
            figures.dimension_bars(analyses.dimension_means, order, colors),
            Table(
                means,
                index=True,
                formats={c: "{:.2f}" for c in means.columns},
                highlight_max=list(means.columns),
            ),
        ],
    )


def _breakdown_blocks(
    means: pd.DataFrame, counts: pd.DataFrame, order: list[str], key: str, label: str
) -> list[Any]:
    known = [c for c in QUERY_TYPES if c in means.columns]  # the paper's order of intents first
    columns = known + [c for c in means.columns if c not in known and c != "all"] + ["all"]
    means = means.reindex(index=[s for s in order if s in means.index], columns=columns)
    counts = counts.reindex(index=means.index, columns=columns)
    means.index.name = counts.index.name = "System"
    levels = [c for c in means.columns if c != "all"]
    return [
        Table(
            means,
            index=True,
            caption=f"Mean weighted score by {label}",
            highlight_max=list(means.columns),
            formats={c: "{:.2f}" for c in means.columns},
        ),
        figures.heatmap(
            means[levels],
            key,
            f"Weighted score by {label}",
            cmap="viridis",
            alt=f"Heatmap of each system's mean weighted score per {label}.",
            caption="Blank cells: no (or too few) sources.",
            basis=f"{int(counts['all'].sum()):,} cited sources of {len(means)} systems, weighted scores "
            f"averaged per system and {label}",
        ),
        Table(
            counts, index=True, caption=f"Sources per system and {label}", formats={c: INT for c in counts}
        ),
    ]


def breakdown_sections(analyses: Analyses) -> list[Section]:
    order = analyses.leaderboard["model_name"].tolist()
    sections = [
        Section(
            "query-types",
            "By query type",
            "The five SourceBench intents: VACOS (shopping), DebateQA (debate), HotpotQA "
            "(multi-hop), Pinocchios "
            "(fact-check), QuoraQuestions (community Q&A). Systems can rank differently per intent.",
            _breakdown_blocks(*analyses.by_query_type, order, "query_types", "query type"),
        )
    ]
    language_blocks = _notes(analyses, "language") + (
        _breakdown_blocks(*analyses.by_language, order, "languages", "language")
        if analyses.by_language is not None
        else []
    )
    sections.append(
        Section(
            "languages",
            "By language",
            "Language the question was asked in (ISO 639-1): the answer's tag from a multilingual sweep, "
            "else the queries file's. A page's detected language plays no part.",
            language_blocks,
        )
    )
    return sections


def correlations_section(analyses: Analyses) -> Section:
    corr = analyses.correlations.copy()
    labels = [f"{d.code} {d.label}" for d in DIMENSIONS]
    corr.index, corr.columns = labels, [d.code for d in DIMENSIONS]
    return Section(
        "correlations",
        "Correlations between dimensions",
        "Spearman rank correlation between the 8 dimensions over all scored sources "
        "(pairwise-complete). High "
        "values mean two dimensions carry overlapping information.",
        [
            figures.heatmap(
                corr,
                "correlations",
                "Spearman correlation of the rubric dimensions",
                cmap="RdBu_r",
                vmin=-1,
                vmax=1,
                fmt="{:.2f}",
                alt="Heatmap of the Spearman correlation matrix of the 8 rubric dimensions.",
                basis=f"all {len(analyses.leaderboard)} systems' scored sources pooled, pairwise-complete",
            ),
            Table(corr, index=True, formats={c: "{:.2f}" for c in corr.columns}),
        ],
    )


def domains_section(analyses: Analyses) -> Section:
    table = analyses.domains.rename(
        columns={
            "domain": "Domain",
            "sources": "Sources",
            "share_pct": "% of sources",
            "systems": "Systems citing it",
            WEIGHTED: "Mean weighted score",
            "authority": "Mean authority (1-5)",
        }
    )
    return Section(
        "domains",
        "Most cited domains",
        "Registered domains with the most cited sources across all systems, with the mean score of "
        "those sources.",
        [Table(table, formats={"% of sources": PCT, "Sources": INT, "Mean weighted score": "{:.2f}"})],
    )


def overlap_section(analyses: Analyses, config: ReportConfig, colors: dict) -> Section:
    blocks: list[Any] = _notes(analyses, "overlap")
    if analyses.overlap is not None and analyses.overlap_joined is not None:
        joined = analyses.overlap_joined.sort_values(["serp_system", WEIGHTED], ascending=[True, False])
        table = joined.rename(
            columns={
                "system": "System",
                "serp_system": "SERP",
                "num_queries": "Queries",
                "num_sources": "Sources",
                "url_overlap_pct": "URL overlap %",
                "domain_overlap_pct": "Domain overlap %",
                WEIGHTED: "Weighted score",
            }
        )
        blocks.append(Table(table, formats={"URL overlap %": PCT, "Domain overlap %": PCT, "Sources": INT}))
        for _, group in joined.groupby("serp_system", sort=True):
            if len(group) >= 2:
                blocks.append(figures.overlap_scatter(group, analyses.overlap_stats, colors))
        stats = analyses.overlap_stats.rename(
            columns={
                "serp_system": "SERP",
                "level": "Level",
                "n_systems": "Systems",
                "spearman_rho": "Spearman rho",
                "spearman_p": "p-value",
                "p_method": "p from",
                "pearson_r": "Pearson r",
            }
        )
        stat_formats = {"Spearman rho": "{:.3f}", "p-value": "{:.3g}", "Pearson r": "{:.3f}"}
        blocks.append(Table(stats, caption="Score vs overlap across systems", formats=stat_formats))
        if analyses.overlap_split is not None and len(analyses.overlap_split):
            rank = dict(zip(analyses.leaderboard["model_name"], analyses.leaderboard["rank"], strict=True))
            split = analyses.overlap_split.sort_values("system", key=lambda names: names.map(rank))
            split = split.rename(
                columns={
                    "system": "System",
                    "in_serp_score": "Score, URL in SERP",
                    "not_in_serp_score": "Score, URL not in SERP",
                    "in_serp_sources": "Sources in SERP",
                    "not_in_serp_sources": "Sources not in SERP",
                }
            )
            blocks.append(
                Table(split, caption=f"Source scores split by presence in {config.serp_systems[0]}")
            )
    top_k = f" (top {config.serp_top_k} results)" if config.serp_top_k else ""
    return Section(
        "overlap",
        "Overlap with search-engine results",
        f"Share of each system's cited sources that the search engine also returned for the same "
        f"query{top_k}, "
        "by canonical URL and by registered domain. The paper found an inverse relation: systems "
        "that lean on "
        "the search engine's results cite lower-quality sources (GPT-5: 15.99 % overlap, rank 1; Tavily: "
        "55.45 %, rank 12).",
        blocks,
    )


def ablation_sections(analyses: Analyses) -> list[Section]:
    ablation_blocks: list[Any] = _notes(analyses, "ablation")
    for name, table in analyses.ablations.items():
        ablation_blocks.append(
            Table(
                table,
                index="systems" not in table.columns,
                caption=f"Mean weighted score: {name}",
                formats={c: "{:.2f}" for c in table.columns if c not in ("systems", "sources")},
            )
        )
        if "systems" not in table.columns and table.shape[0] > 2 and table.shape[1] > 2:
            cells = table.drop(index="mean", columns="mean", errors="ignore")
            key = "ablation_" + name.replace(" x ", "_x_").replace(" ", "_")
            ablation_blocks.append(
                figures.heatmap(
                    cells,
                    key,
                    f"Mean weighted score: {name}",
                    alt=f"Heatmap of the {name} ablation.",
                    basis="each system's weighted score (mean over its sources), averaged over the systems "
                    "in each cell",
                )
            )
    correctness_blocks: list[Any] = _notes(analyses, "correctness")
    if analyses.correctness is not None:
        labels = {d.key: f"{d.code} {d.label}" for d in DIMENSIONS}
        labels.update({WEIGHTED: "Weighted total", UNWEIGHTED: "Unweighted mean"})
        table = analyses.correctness.assign(score=analyses.correctness["score"].map(labels)).rename(
            columns={
                "score": "Score",
                "spearman_rho": "Spearman rho",
                "spearman_p": "p-value",
                "p_method": "p from",
                "pearson_r": "Pearson r",
                "mean_when_correct": "Mean if correct",
                "mean_when_incorrect": "Mean if incorrect",
            }
        )
        correctness_blocks.append(
            Table(table, formats={"p-value": "{:.3g}", "Spearman rho": "{:.3f}", "Pearson r": "{:.3f}"})
        )
        correctness_blocks.append(figures.correctness_bars(analyses.correctness, labels))
    return [
        Section(
            "ablation",
            "Ablations by system factor",
            "Scores grouped by system metadata (for example model x retrieval tool); cells and margins are "
            "means over sources.",
            ablation_blocks,
        ),
        Section(
            "correctness",
            "Source quality vs answer correctness",
            "Per (system, query): mean source score of each dimension against the answer's "
            "correctness label.",
            correctness_blocks,
        ),
    ]


def crawl_section(analyses: Analyses) -> Section:
    blocks: list[Any] = [
        Table(analyses.funnel, caption="From citation to scored source", formats={"count": INT})
    ]
    blocks += _notes(analyses, "crawl")
    if analyses.statuses is not None:
        blocks.append(figures.status_bars(analyses.statuses))
        blocks.append(Table(analyses.statuses, formats={"pages": INT, "share_pct": PCT}))
    if analyses.failures is not None and len(analyses.failures):
        blocks.append(
            Table(analyses.failures, caption="Most frequent failure reasons", formats={"pages": INT})
        )
    if analyses.manipulation is not None:
        blocks.append(
            Table(
                analyses.manipulation,
                caption="Sources whose page tries to game the judge (hidden text, injected instructions, "
                "stuffing, unverified structured data, mismatched dates; see docs/contracts.md)",
                formats={"flagged_pct": PCT},
            )
        )
    return Section(
        "crawl",
        "Crawl funnel",
        "How many cited URLs were fetched, how many failed and why. Failed pages are explicit status "
        "rows; they "
        "are never given a default score.",
        blocks,
    )


def judge_section(analyses: Analyses) -> Section:
    blocks: list[Any] = _notes(analyses, "judge")
    if analyses.usage is not None:
        quiet = [c for c in ("unscorable", "error", "skipped", "truncated") if not analyses.usage[c].any()]
        usage = analyses.usage.drop(columns=quiet).rename(columns=USAGE_LABELS)
        formats = {c: INT for c in usage.columns if c.endswith("tokens") or c in COUNT_LABELS}
        formats.update({"cache hit %": PCT, "mean latency (s)": "{:.2f}", "cost (USD)": "${:,.4f}"})
        blocks.append(Table(usage, formats=formats))
        total = analyses.usage.iloc[-1]
        if total["prompt_tokens"] + total["output_tokens"] == 0:
            blocks.append(
                Note(
                    "No LLM tokens were used (an engine without a language model, such as the signals judge)."
                )
            )
        else:
            blocks.append(figures.token_bars(analyses.usage))
            if "cost (USD)" not in usage:
                blocks.append(
                    Note("No token prices configured (report.prices): tokens only, no cost estimate.")
                )
    return Section(
        "judge",
        "Judge tokens and cost",
        "Requests per engine, model, prompt layout and stage; prompt tokens served from the prefix cache are "
        "counted separately (cache hit %). 'truncated' counts requests whose page text was cut to fit the "
        "token budget. Status columns that are zero everywhere are not shown.",
        blocks,
    )


def calibration_section(run: RunData) -> Section | None:
    """The result of ``sourcebench calibrate`` on this run, when it ran (``calibration/``)."""
    if run.calibration_gate is None and run.calibration_agreement is None:
        return None
    blocks: list[Any] = []
    gate = run.calibration_gate
    if gate is not None and len(gate):
        for config, group in gate.groupby("config", sort=True):
            failed = group[~group["passed"].astype(bool)]
            verdict = "passes" if failed.empty else f"fails on {', '.join(failed['dimension'])}"
            kind = "info" if failed.empty else "warning"
            blocks.append(
                Note(f"Judge configuration {config} {verdict} (MAE limit {group['max_mae'].max()}).", kind)
            )
    agreement = run.calibration_agreement
    if agreement is not None and len(agreement):
        for kind, title in (
            ("judge_vs_human", "Judge vs human consensus"),
            ("judge_vs_judge", "Judge vs judge"),
            ("annotator_vs_annotator", "Annotator vs annotator"),
        ):
            rows = agreement[agreement["comparison"] == kind].drop(columns="comparison")
            if len(rows):
                formats = {c: "{:.3f}" for c in ("mae", "qwk", "spearman", "alpha_ordinal", "alpha_interval")}
                blocks.append(Table(rows, caption=title, formats=formats))
    return Section(
        "calibration",
        "Judge calibration",
        "Agreement of the judge with human labels (from `sourcebench calibrate`): MAE, quadratic-weighted "
        "kappa, Spearman and Krippendorff's alpha per dimension; the paper's bar is MAE <= 0.5 on every "
        "dimension.",
        blocks,
    )


#: Nested settings worth a row of their own in the summary (deeper than two levels).
KEY_LEAVES = {"layout", "current_date", "policy", "obey_robots", "allow_private_networks"}


def _cell(value: Any) -> str:
    text = (
        json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, list | dict) else str(value)
    )
    return text if len(text) <= 120 else text[:117] + "..."


def key_settings(configured: dict[str, Any]) -> list[tuple[str, str]]:
    """The settings a reader needs (sections' own scalars, the active judge's model, a few key leaves).

    Everything else stays in the collapsed full manifest.
    """
    engine = str((configured.get("judge") or {}).get("engine", ""))
    rows = []
    for section, values in configured.items():
        if section == "report" or not isinstance(values, dict):
            continue
        for key, value in values.items():
            if not isinstance(value, dict):
                rows.append((f"{section}.{key}", _cell(value)))
                continue
            for leaf, inner in value.items():
                if leaf in KEY_LEAVES or (section == "judge" and key == engine and leaf == "model"):
                    rows.append((f"{section}.{key}.{leaf}", _cell(inner)))
    return rows


def _stages_table(stages: dict[str, Any]) -> Table:
    rows = []
    for name, stage in stages.items():
        stage = stage if isinstance(stage, dict) else {}
        counts = json.dumps(stage.get("counts", {}), ensure_ascii=False, default=str)
        rows.append(
            {
                "stage": name,
                "status": stage.get("status"),
                "wall_s": stage.get("wall_s"),
                "started_at": stage.get("started_at"),
                "counts": counts if len(counts) <= 120 else counts[:117] + "...",
            }
        )
    return Table(pd.DataFrame(rows), caption="Stages", formats={"wall_s": "{:.1f}"})


def configuration_section(run: RunData, config: ReportConfig) -> Section:
    manifest = run.manifest or {}
    settings = pd.DataFrame(
        [
            ("run", run.uri),
            ("code version", _code_version(manifest) or "–"),
            ("rubric version (this code)", RUBRIC_VERSION),
            ("bootstrap", f"{config.n_boot} replicates, seed {config.seed}, level {config.confidence_level}"),
            ("reduce policy", run.policy),
            ("SERP systems", ", ".join(config.serp_systems) or "–"),
            ("inputs absent from the run", ", ".join(run.missing) or "none"),
        ],
        columns=["setting", "value"],
    )
    blocks: list[Any] = [Table(settings, caption="Report settings")]
    if not manifest:
        blocks.append(Note("This run has no manifest.json.", "warning"))
        return Section("configuration", "Run configuration", "", blocks)
    if isinstance(manifest.get("stages"), dict) and manifest["stages"]:
        blocks.append(_stages_table(manifest["stages"]))
    configured = manifest.get("config")
    if isinstance(configured, dict) and configured:
        table = pd.DataFrame(key_settings(configured), columns=["setting", "value"])
        blocks.append(
            Table(table, caption="Key settings (manifest.json; everything is in the full manifest below)")
        )
    blocks.append(Code(json.dumps(manifest, indent=2, ensure_ascii=False, default=str), "Full manifest.json"))
    return Section("configuration", "Run configuration", "", blocks)


def _code_version(manifest: dict[str, Any] | None) -> str:
    """``0123456789ab (dirty)`` from the manifest's ``code_version`` (a dict or a plain string)."""
    version = (manifest or {}).get("code_version")
    if isinstance(version, dict):
        sha = str(version.get("git") or version.get("package") or "")
        return (sha[:12] + (" (dirty)" if version.get("dirty") else "")) if sha else ""
    return str(version or "")


def build_report(run: RunData, analyses: Analyses, config: ReportConfig) -> Report:
    """All sections of the report in reading order, with the headline cards."""
    colors = figures.system_colors(analyses.leaderboard["model_name"].tolist())
    lb = analyses.leaderboard
    best = lb.iloc[0] if len(lb) else None
    cards = [
        ("systems", f"{len(lb)}"),
        ("queries", f"{run.sources['query_id'].nunique():,}"),
        ("scored sources", f"{len(run.sources):,}"),
    ]
    if run.pages is not None:
        cards.append(
            ("pages fetched ok", f"{int((run.pages['status'] == 'ok').sum()):,} / {len(run.pages):,}")
        )
    if analyses.usage is not None:
        total = analyses.usage.iloc[-1]
        tokens = int(total["prompt_tokens"] + total["output_tokens"])
        cards.append(
            ("judge tokens", f"{tokens:,}") if tokens else ("judge requests", f"{int(total['requests']):,}")
        )
    if best is not None:
        cards.append((f"top system ({best[WEIGHTED]:.2f})", str(best["model_name"])))
    coverage = read_coverage(run)
    if coverage is not None:
        share = coverage["overall"]["share"]
        cards.insert(0, ("INCOMPLETE: coverage" if is_incomplete(coverage) else "coverage", f"{share:.0%}"))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    code = _code_version(run.manifest)
    subtitle = f"Run {run.uri} · generated {generated}" + (f" · code {code}" if code else "")
    sections = [
        Section(
            "highlights",
            "Highlights",
            "",
            [Bullets(findings(analyses, config, constant_dimensions(run.sources)))],
        ),
        leaderboard_section(analyses, config, colors),
        coverage_section(run, analyses, coverage),
        dimensions_section(analyses, colors),
        *breakdown_sections(analyses),
        correlations_section(analyses),
        domains_section(analyses),
        overlap_section(analyses, config, colors),
        *ablation_sections(analyses),
        crawl_section(analyses),
        judge_section(analyses),
        calibration_section(run),
        configuration_section(run, config),
    ]
    present = [section for section in sections if section is not None]
    title = config.title or f"SourceBench audit: {run.name}"
    return Report(f"INCOMPLETE: {title}" if is_incomplete(coverage) else title, subtitle, cards, present)
