"""``sourcebench collect``: ask generative engines the queries, record answers and citations.

Examples::

    sourcebench collect --queries queries.csv --language en --systems systems.json --out runs/sweep1
    sourcebench collect --template multilingual.yaml --languages en,de,fr --sample-per-stratum 2 \\
        --systems systems.yaml --secrets ~/.sourcebench-secrets.yaml --out s3://bucket/sweeps/2026-12
    sourcebench collect --queries queries.csv --serp google=serp_google.csv --out runs/sweep1

The same module runs under ``ray job submit --working-dir . -- python -m jobs.collect ...``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from crawler.base import InputError, RunStore
from crawler.layout import LAYOUT
from jobs.cli import add_set_argument, dotted_overrides, positive_float, positive_int, run_module
from jobs.collectors.bundles import write_answer_bundles
from jobs.collectors.config import CollectConfig, load_collect_config
from jobs.collectors.keys import KeyRing
from jobs.collectors.runner import Sweep
from jobs.collectors.sweeps import expand_templates, load_query_set, load_template_file, stratified_sample
from jobs.collectors.systems import EndpointSystem, SerpSystem, load_systems
from jobs.schemas import CITATIONS_SCHEMA

log = logging.getLogger("sourcebench.collect")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML file with any of the options below (flags win)")
    parser.add_argument("--out", help="run directory: local path or s3://bucket/prefix")
    parser.add_argument("--systems", action="append", help="system definitions file (JSON/YAML); repeatable")
    parser.add_argument(
        "--serp", action="append", help="SERP results as NAME=PATH (CSV/JSON/JSONL); repeatable"
    )
    parser.add_argument("--queries", help="queries CSV: query_id,query,query_type[,language]")
    parser.add_argument("--template", help="query template file (YAML/JSON), expanded across --languages")
    parser.add_argument(
        "--languages",
        type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
        help="comma-separated languages for --template, e.g. en,de,fr",
    )
    parser.add_argument("--language", help="language tag for CSV queries without one, e.g. en")
    parser.add_argument(
        "--skip-missing-translations",
        action="store_true",
        help="leave out template languages without a translation instead of failing",
    )
    parser.add_argument(
        "--sample-per-stratum", type=positive_int, help="at most N queries per (query_type, language)"
    )
    parser.add_argument("--seed", type=int, help="seed of the sample and of backoff jitter (default 0)")
    parser.add_argument(
        "--secrets", help="secrets file: JSON/YAML mapping of system or variable names to keys"
    )
    parser.add_argument(
        "--chunk-size", type=positive_int, help="(system, query) pairs per committed chunk (default 25)"
    )
    parser.add_argument(
        "--retry-failed", action="store_true", help="ask again pairs that failed in earlier runs"
    )
    parser.add_argument(
        "--max-concurrency", type=positive_int, help="override each endpoint's requests in flight"
    )
    parser.add_argument(
        "--timeout-s", type=positive_float, help="override each endpoint's request timeout, seconds"
    )
    add_set_argument(parser, "chunk_size=50")
    parser.add_argument("--max-attempts", type=positive_int, help="override each endpoint's tries per query")


def build_systems(config: CollectConfig) -> list[EndpointSystem | SerpSystem]:
    systems: list[EndpointSystem | SerpSystem] = []
    for path in config.systems:
        systems += load_systems(path)
    for item in config.serp:
        name, _, path = item.partition("=")
        systems.append(SerpSystem(kind="serp", name=name, results_path=path))
    overrides = config.policy_overrides()
    for i, system in enumerate(systems):
        if isinstance(system, EndpointSystem) and overrides:
            systems[i] = system.model_copy(update={"policy": system.policy.model_copy(update=overrides)})
    names = [s.name for s in systems]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise InputError(
            ", ".join(config.systems + config.serp), f"two systems are named {duplicate!r}", field="name"
        )
    return systems


def build_queries(config: CollectConfig):
    if config.template:
        queries = expand_templates(
            load_template_file(config.template),
            config.languages,
            source=config.template,
            skip_missing=config.skip_missing_translations,
        )
    else:
        queries = load_query_set(config.queries, language=config.language)
    if config.sample_per_stratum:
        queries = stratified_sample(queries, config.sample_per_stratum, seed=config.seed)
    return queries


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    overrides = {k: v for k, v in vars(args).items() if k not in {"config", "overrides"}}
    overrides.update(dotted_overrides(args.overrides))
    try:
        config = load_collect_config(args.config, overrides)
        systems = build_systems(config)
        queries = build_queries(config)
        keyring = KeyRing.from_file(config.secrets)
        sweep = Sweep(
            RunStore(config.out),
            queries,
            systems,
            keyring,
            chunk_size=config.chunk_size,
            retry_failed=config.retry_failed,
            seed=config.seed,
        )
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    log.info("collect: %d queries x %d systems -> %s", queries.num_rows, len(systems), config.out)
    try:
        manifest = sweep.run()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    answers = sweep.committed_answers(["system", "query_id", "status", "answer_text", "raw_response_json"])
    citations = sweep.store.read_table(LAYOUT.collect_citations_table, schema=CITATIONS_SCHEMA)
    bundles = write_answer_bundles(sweep.store, systems, answers, citations)
    for name, outcome in bundles.items():
        if "skipped" in outcome:
            log.warning("no answer_url_bundle for %s: %s", name, outcome["skipped"])
    print(
        json.dumps(
            {
                "out": config.out,
                "queries": manifest["queries"],
                "citations": manifest["citations"],
                "answers_by_system_status": manifest["answers_by_system_status"],
                "answer_url_bundles": bundles,
            }
        )
    )
    return 0


if __name__ == "__main__":
    run_module("collect")
