"""``sourcebench calibrate``: judge vs human agreement (MAE, QWK, Spearman, alpha), gating, few-shot picking.

Usage::

    sourcebench calibrate --labels human.csv --run runs/pilot            # gate: exit 1 if MAE > 0.5
    sourcebench calibrate --labels human.csv --run runs/pilot --max-mae 0.4 --min-qwk 0.6
    sourcebench calibrate --run runs/pilot                                # two judge configs on one run
    sourcebench calibrate --labels human.csv --run runs/qwen --run runs/signals   # two runs

Writes ``agreement.csv``, ``gate.csv``, ``annotators.csv``, ``calibration.md`` and ``fewshot.yaml``
(judge calibration format) to ``--out`` (default ``<first run>/calibration``).
Exit status: 0 when every gated configuration passes (or nothing is gated), 1 when one fails,
2 on bad input.
"""

from __future__ import annotations

import argparse
import posixpath
import sys

import pandas as pd
import pyarrow.dataset as ds

from crawler.base import InputError, RunStore, apply_override, validate_model
from crawler.layout import LAYOUT
from crawler.runner import pages_dataset
from jobs.analysis.calibration import Calibration, GateThresholds, calibrate, judge_scores
from jobs.analysis.document import Report, Section, Table
from jobs.analysis.fewshot import fewshot_yaml, pick_fewshot
from jobs.analysis.labels import load_human_labels
from jobs.analysis.render_markdown import render_markdown
from jobs.analysis.run_data import read_frame
from jobs.analysis.urls import canonical_url
from jobs.cli import (
    add_set_argument,
    finite_float,
    nonnegative_float,
    nonnegative_int,
    positive_int,
    run_module,
)

FEWSHOT_PAGE_COLUMNS = (
    "url",
    "title",
    "text_main",
    "published_date",
    "modified_date",
    "authors",
    "site_name",
    "domain",
    "signals",
)
METRIC_FORMATS = {c: "{:.3f}" for c in ("mae", "qwk", "spearman", "alpha_ordinal", "alpha_interval")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--labels", help="human labels CSV: query_id,url,annotator,<dimension>... (1-5)")
    parser.add_argument("--run", action="append", required=True, metavar="RUN_URI", help="run (repeatable)")
    parser.add_argument("--gate-config", action="append", metavar="LABEL", help="judge configuration to gate")
    parser.add_argument(
        "--max-mae", type=nonnegative_float, default=0.5, help="largest MAE allowed per dimension"
    )
    parser.add_argument(
        "--max-mae-dim", action="append", metavar="DIMENSION=MAE", help="per-dimension MAE limit (repeatable)"
    )
    parser.add_argument("--min-qwk", type=finite_float, help="smallest quadratic-weighted kappa allowed")
    parser.add_argument(
        "--min-alpha", type=finite_float, help="smallest Krippendorff's alpha (interval) allowed"
    )
    parser.add_argument(
        "--min-items", type=positive_int, default=1, help="fewest labelled items per dimension"
    )
    parser.add_argument("--out", help="output folder (default <first run>/calibration)")
    add_set_argument(parser, "min_qwk=0.6")
    parser.add_argument(
        "--fewshot-per-stage", type=nonnegative_int, default=2, help="few-shot examples per stage (0: none)"
    )


def thresholds_from_args(args: argparse.Namespace) -> GateThresholds:
    per_dim = {}
    for text in args.max_mae_dim or []:
        name, sep, value = text.partition("=")
        try:
            per_dim[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise InputError("--max-mae-dim", f"expected DIMENSION=MAE, got {text!r}", field="--max-mae-dim")
    values = {
        "--max-mae": ("max_mae", args.max_mae),
        "--max-mae-dim": ("max_mae_by_dimension", per_dim),
        "--min-qwk": ("min_qwk", args.min_qwk),
        "--min-alpha": ("min_alpha", args.min_alpha),
        "--min-items": ("min_items", args.min_items),
    }
    flags = {field: flag for flag, (field, _) in values.items()}
    settings = dict(values.values())
    for assignment in args.overrides:
        apply_override(settings, assignment)
    try:
        return validate_model(GateThresholds, settings, "command line")
    except InputError as exc:
        field = (exc.field or "").split(".")[0]
        if field in flags:
            raise InputError(flags[field], exc.reason) from None
        raise InputError("--set", exc.reason, field=exc.field) from None


def load_judges(runs: list[str]) -> dict[str, pd.DataFrame]:
    judges: dict[str, pd.DataFrame] = {}
    for uri in runs:
        prefix = f"{posixpath.basename(uri.rstrip('/'))}:" if len(runs) > 1 else ""
        found = judge_scores(uri, prefix)
        if not found:
            raise InputError(uri, "no judgments/ with pages/, and no leaderboard/source_metrics.parquet")
        judges.update(found)
    return judges


def labelled_pages(run_uri: str, urls: set[str]) -> pd.DataFrame | None:
    """Page records of the labelled URLs only (a filtered scan, never the whole crawl's text)."""
    store = RunStore(run_uri)
    if not store.exists(LAYOUT.pages):
        return None
    dataset = pages_dataset(store)
    return dataset.to_table(
        columns=list(FEWSHOT_PAGE_COLUMNS), filter=ds.field("url").isin(sorted(urls))
    ).to_pandas()


def query_texts(run_uri: str) -> dict[str, str]:
    queries = read_frame(RunStore(run_uri), LAYOUT.queries, ("query_id", "query"))
    return (
        {} if queries is None else dict(zip(queries["query_id"].astype(str), queries["query"], strict=True))
    )


def summary_markdown(result: Calibration, thresholds: GateThresholds) -> str:
    sections = [
        Section(
            "gate",
            "Gate",
            f"Judge vs human consensus; pass when MAE <= {thresholds.max_mae} on every dimension"
            + (f", QWK >= {thresholds.min_qwk}" if thresholds.min_qwk is not None else "")
            + (f", alpha >= {thresholds.min_alpha}" if thresholds.min_alpha is not None else "")
            + ".",
            [Table(result.gate, formats={"mae": "{:.3f}", "qwk": "{:.3f}", "alpha_interval": "{:.3f}"})],
        )
    ]
    for kind, title in (
        ("judge_vs_human", "Judge vs human consensus"),
        ("annotator_vs_annotator", "Annotator vs annotator"),
        ("judge_vs_judge", "Judge configuration vs judge configuration"),
    ):
        rows = result.agreement[result.agreement["comparison"] == kind].drop(columns="comparison")
        if len(rows):
            sections.append(Section(kind, title, "", [Table(rows, formats=METRIC_FORMATS)]))
    if result.annotators is not None:
        sections.append(
            Section(
                "annotators",
                "Krippendorff's alpha across all annotators",
                "",
                [Table(result.annotators, formats=METRIC_FORMATS)],
            )
        )
    passed = "PASS" if result.passed else ("FAIL" if len(result.gate) else "not gated")
    return render_markdown(Report("Judge calibration", f"Result: {passed}", [], sections))


def print_summary(result: Calibration) -> None:
    judged = result.agreement[result.agreement["dimension"] == "all"]
    for row in judged.itertuples(index=False):
        print(
            f"{row.comparison:<24} {row.rater_a} vs {row.rater_b}: n={row.n} MAE={row.mae:.3f} "
            f"QWK={row.qwk:.3f} Spearman={row.spearman:.3f} alpha(int)={row.alpha_interval:.3f}"
        )
    if result.gate.empty:
        print("gate: nothing gated (no human labels)")
        return
    for config, group in result.gate.groupby("config", sort=True):
        failed = group[~group["passed"]]
        verdict = "PASS" if failed.empty else "FAIL"
        details = "; ".join(f"{r.dimension}: {r.reason}" for r in failed.itertuples(index=False))
        print(f"gate {verdict} {config}" + (f" ({details})" if details else ""))


def run(args: argparse.Namespace) -> int:
    try:
        thresholds = thresholds_from_args(args)
        labels = load_human_labels(args.labels) if args.labels else None
        judges = load_judges(args.run)
        if labels is None and len(judges) < 2:
            raise InputError(
                args.run[0], "nothing to compare: give --labels or a run with two judge configurations"
            )
        unknown = sorted(set(args.gate_config or []) - set(judges))
        if unknown:
            raise InputError("--gate-config", f"unknown configuration(s) {unknown}; have {sorted(judges)}")
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = calibrate(judges, labels, thresholds, args.gate_config)
    out = RunStore(args.out or RunStore(args.run[0]).uri_of(LAYOUT.calibration))
    out.write_text(LAYOUT.calibration_agreement, result.agreement.to_csv(index=False))
    out.write_text(LAYOUT.calibration_gate, result.gate.to_csv(index=False))
    if result.annotators is not None:
        out.write_text("annotators.csv", result.annotators.to_csv(index=False))
    out.write_text("calibration.md", summary_markdown(result, thresholds))
    if labels is not None and args.fewshot_per_stage > 0:
        pages = labelled_pages(args.run[0], set(labels["url_canonical"]))
        if pages is not None:
            pages["url"] = pages["url"].map(canonical_url)
        payload = pick_fewshot(labels, pages, query_texts(args.run[0]), args.fewshot_per_stage)
        out.write_text("fewshot.yaml", fewshot_yaml(payload))
    print_summary(result)
    print(f"calibration written to {out.uri}")
    return 0 if result.passed or result.gate.empty else 1


if __name__ == "__main__":
    run_module("calibrate")
