"""``sourcebench judge``: score a run's pages with the configured judge engine, or rescore after a change.

Examples::

    sourcebench judge --run runs/audit1                                  # signals judge (no LLM)
    sourcebench judge --run runs/audit1 --config judge.yaml              # YAML with a ``judge:`` section
    sourcebench judge --run s3://bucket/a1 --engine vllm --model s3://bucket/models/Qwen3-8B \\
        --accelerator-type H100
    sourcebench judge --run runs/audit1 --rescore --prompt-version p2    # only changed stages recompute
    ray job submit --working-dir . -- python -m jobs.judge --run s3://bucket/a1 --config judge.yaml

Requests (one per page x query) come from ``--requests`` (Parquet/CSV with url_key, query_id,
query_text) or from the run's audit inputs (``inputs/selected_sources.parquet`` and
``inputs/queries.parquet``). Output: ``<run>/judgments/*.parquet`` (JUDGMENT_SCHEMA) and a summary
under ``<run>/judgments/_runs/``. With the vllm engine the judge runs as Ray Data LLM engine actors,
pinned to GPU nodes by ``judge.vllm.accelerator_type`` / ``judge.vllm.placement_bundles``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from crawler.base import InputError, RunStore
from crawler.layout import LAYOUT
from jobs.cli import add_set_argument, dotted_overrides, positive_int, run_module
from jobs.progress import judge_progress
from jobs.ray_runtime import RayConfig, ensure_ray
from judge import JudgeConfig, judge_run
from judge.plan import REQUEST_COLUMNS, RequestSource

#: CLI flag -> dotted JudgeConfig field it overrides.
_OVERRIDES = {
    "engine": "engine",
    "layout": "prompts.layout",
    "prompt_version": "prompts.label",
    "current_date": "prompts.current_date",
    "token_budget": "prompts.token_budget",
    "cache_uri": "cache_uri",
    "accelerator_type": "vllm.accelerator_type",
    "base_url": "openai.base_url",
    "executor": "executor",
    "workers": "workers",
}


def add_arguments(parser: argparse.ArgumentParser, rescore: bool = True) -> None:
    """The judge's flags; ``rescore=False`` leaves out ``--rescore`` (costbench shares the others)."""
    parser.add_argument("--run", required=True, help="Run directory (local path or s3://bucket/prefix).")
    parser.add_argument("--config", help="YAML file with judge settings (top level or under 'judge:').")
    parser.add_argument("--requests", help="Parquet or CSV of url_key,query_id,query_text to judge.")
    parser.add_argument("--engine", choices=["signals", "openai", "vllm"], help="Judge engine.")
    parser.add_argument("--model", help="Model: vllm path/S3 URI/id, or the endpoint's model name (openai).")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint root (openai engine).")
    parser.add_argument("--layout", choices=["paper", "shared"], help="Prompt layout.")
    parser.add_argument("--prompt-version", help="Label of the prompt text (part of every cache key).")
    parser.add_argument("--current-date", help="The 'today' of the freshness stage, YYYY-MM-DD.")
    parser.add_argument("--token-budget", type=positive_int, help="Most prompt tokens per request.")
    parser.add_argument("--cache-uri", help="Judgment cache shared across runs.")
    add_set_argument(parser, "sampling.max_tokens=512")
    parser.add_argument("--accelerator-type", help="Ray accelerator type that pins vLLM engines (e.g. H100).")
    if rescore:
        parser.add_argument(
            "--rescore",
            action="store_true",
            help="Rescore a judged run after a change (needs --prompt-version, --model, --layout, "
            "--current-date, "
            "--engine or --config); only stage requests whose cache key changed are recomputed.",
        )
    parser.add_argument(
        "--num-cpus", type=positive_int, help="Logical CPUs of a local Ray (vLLM on CPU needs ~8)."
    )
    parser.add_argument(
        "--executor", choices=["auto", "ray", "local"], help="Where units run (default auto: Ray if running)."
    )
    parser.add_argument("--workers", type=positive_int, help="Most unit workers (Ray actors) at once.")


def load_judge_config(args: argparse.Namespace) -> JudgeConfig:
    """The JudgeConfig from ``--config`` plus the flags that override single fields."""
    overrides: dict[str, Any] = {
        field: getattr(args, flag)
        for flag, field in _OVERRIDES.items()
        if getattr(args, flag, None) is not None
    }
    if args.model is not None:
        engine = overrides.get("engine")
        if engine is None and args.config:
            engine = JudgeConfig.from_yaml(args.config).engine
        overrides["openai.model" if engine == "openai" else "vllm.model"] = args.model
    overrides.update(dotted_overrides(args.overrides))
    if args.config:
        return JudgeConfig.from_yaml(args.config, overrides=overrides)
    return JudgeConfig.from_dict({}, source="command line", overrides=overrides)


def requests_from_run(store: RunStore) -> RequestSource:
    """One request per selected source of an audit run's inputs, with its query's text.

    Which of them get judged (one judgment per page and query, aliases merged) is decided in
    :func:`judge.judge_run` by :func:`judge.pairs.judge_pairs`, as for the audit and costbench.
    """
    for relpath in (LAYOUT.selected, LAYOUT.queries):
        if not store.exists(relpath):
            raise InputError(
                store.uri_of(relpath), "not found: pass --requests, or run `sourcebench audit` inputs"
            )
    selected = store.read_table(LAYOUT.selected).select(["url_key", "query_id"])
    queries = (
        store.read_table(LAYOUT.queries)
        .select(["query_id", "query"])
        .rename_columns(["query_id", "query_text"])
    )
    table = selected.join(queries, "query_id", join_type="inner").select(list(REQUEST_COLUMNS))
    return RequestSource.of_table(table, name=store.uri_of(LAYOUT.selected))


def read_requests(args: argparse.Namespace, store: RunStore) -> RequestSource:
    """The requests of ``--requests`` (Parquet or CSV, read batch by batch), or the run's audit inputs."""
    return RequestSource.of_file(args.requests) if args.requests else requests_from_run(store)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_judge_config(args)
        if args.rescore and not any(
            getattr(args, flag, None) is not None
            for flag in ("prompt_version", "model", "layout", "current_date", "engine", "config")
        ):
            raise InputError("command line", "--rescore needs a change to rescore with", field="--rescore")
        store = RunStore(args.run)
        requests = read_requests(args, store)
        if config.engine == "vllm" or config.executor == "ray":
            ensure_ray(RayConfig(num_cpus=args.num_cpus))
        with judge_progress(store, lambda: 3 * requests.num_rows):
            summary = judge_run(store.uri, requests, config)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    bad = summary["statuses"].get("error", 0)
    if bad:
        print(f"{bad} judgments failed (status error); rerun to retry them", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    run_module("judge")
