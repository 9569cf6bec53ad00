"""``sourcebench report``: write a run's HTML and Markdown report (``<run>/leaderboard/report.html``).

Usage::

    sourcebench report --run runs/demo
    sourcebench report --run s3://bucket/audits/2026-12 --serp-system google --serp-top-k 10 \\
        --system-metadata systems.csv --correctness answers.csv
    ray job submit --working-dir . -- python -m jobs.report --run s3://bucket/audits/2026-12
"""

from __future__ import annotations

import argparse
import sys

from crawler.base import InputError, apply_override, validate_model
from jobs.analysis import ReportConfig
from jobs.analysis.config import Prices
from jobs.cli import add_set_argument, nonnegative_float, positive_int, probability, run_module


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, metavar="RUN_URI", help="run directory (local or s3://)")
    parser.add_argument(
        "--config", help="YAML with report settings (a top-level 'report:' key or the settings)"
    )
    parser.add_argument(
        "--serp-system",
        action="append",
        metavar="NAME",
        help="a system whose citations are a search engine's ranked results (repeatable)",
    )
    parser.add_argument("--serp-top-k", type=positive_int, help="compare with the SERP's top k results only")
    parser.add_argument("--system-metadata", help="CSV/JSON/YAML of system factors for ablation tables")
    parser.add_argument(
        "--ablation", action="append", metavar="ROWS:COLUMNS", help="factor pair to tabulate (repeatable)"
    )
    parser.add_argument("--correctness", help="CSV system,query_id,correct of answer-correctness labels")
    parser.add_argument("--n-boot", type=positive_int, help="bootstrap replicates (default 1000)")
    parser.add_argument("--seed", type=int, help="bootstrap seed (default 0)")
    parser.add_argument("--level", type=probability, help="confidence level of the intervals (default 0.95)")
    parser.add_argument("--price-prompt", type=nonnegative_float, help="USD per 1M uncached prompt tokens")
    parser.add_argument("--price-cached", type=nonnegative_float, help="USD per 1M cached prompt tokens")
    parser.add_argument("--price-output", type=nonnegative_float, help="USD per 1M output tokens")
    parser.add_argument("--title", help="report title")
    add_set_argument(parser, "min_cell_sources=5")


def config_from_args(args: argparse.Namespace) -> ReportConfig:
    """The report settings: the YAML file (if any), then the flags given on the command line."""
    base = ReportConfig.from_yaml(args.config) if args.config else ReportConfig()
    settings = base.model_dump()
    flags = {
        "serp_systems": args.serp_system,
        "serp_top_k": args.serp_top_k,
        "system_metadata": args.system_metadata,
        "correctness_labels": args.correctness,
        "n_boot": args.n_boot,
        "seed": args.seed,
        "confidence_level": args.level,
        "title": args.title,
    }
    settings.update({key: value for key, value in flags.items() if value is not None})
    if args.ablation:
        pairs = [tuple(text.split(":", 1)) for text in args.ablation]
        if any(len(pair) != 2 for pair in pairs):
            raise InputError(
                "--ablation", "expected ROWS:COLUMNS, e.g. model:retrieval_tool", field="--ablation"
            )
        settings["ablations"] = pairs
    if any(v is not None for v in (args.price_prompt, args.price_cached, args.price_output)):
        settings["prices"] = Prices(
            usd_per_1m_prompt_tokens=args.price_prompt or 0.0,
            usd_per_1m_cached_prompt_tokens=args.price_cached,
            usd_per_1m_output_tokens=args.price_output or 0.0,
        ).model_dump()
    for assignment in args.overrides:
        apply_override(settings, assignment)
    return validate_model(ReportConfig, settings, "command line")


def run(args: argparse.Namespace) -> int:
    try:
        from jobs.analysis import write_report  # matplotlib and scipy: not needed for --help

        written = write_report(args.run, config=config_from_args(args))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {written['report.html']}")
    print(f"markdown: {written['report.md']}")
    print(f"{len(written) - 2} figures and tables under {written['report.html'].rsplit('/', 1)[0]}/")
    return 0


if __name__ == "__main__":
    run_module("report")
