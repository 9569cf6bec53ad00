"""Reduce per-source scores to the official leaderboard files, with Ray Data or in-process threads.

Each batch of score rows is summarised where it is read (``jobs.leaderboard.batches``: per-source
metrics, their CSV text, per-group partial sums), by Ray Data tasks (a cluster) or by a thread pool
(a laptop: no Ray start-up). The driver streams the summaries once, in input order, appending
``source_metrics`` (CSV + Parquet) and merging partial sums, so its memory depends on the number of
groups, not on the number of sources. Usage::

    sourcebench reduce --scores gpt5=gpt5.enriched.json --scores tavily=tavily.enriched.json \\
        --query-metadata queries.csv --out leaderboard/
    ray job submit --working-dir . -- python -m jobs.reduce --scores scores.parquet --out s3://b/lb
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from crawler.base import InputError, RunStore, apply_override, resolve_uri, validate_model
from crawler.layout import LAYOUT
from jobs.cli import Deprecated, add_set_argument, nonnegative_int
from jobs.collectors.serp import load_serp
from jobs.inputs import load_enriched_scores, load_query_types
from jobs.leaderboard.aggregate import LeaderboardAccumulator
from jobs.leaderboard.batches import PARTIAL_COLUMNS, from_ipc, summarize_batch
from jobs.leaderboard.config import ReduceConfig
from jobs.leaderboard.intervals import add_intervals
from jobs.leaderboard.metrics import SOURCE_METRICS_SCHEMA
from jobs.leaderboard.ranks import citation_counts, rank_metrics
from jobs.leaderboard.writers import StreamingCsv, leaderboard_payload, write_leaderboard_files
from jobs.ray_runtime import RayConfig, ensure_ray, input_errors_unwrapped
from jobs.schemas import SOURCE_SCORES_SCHEMA
from judge.rubric import DIMENSION_KEYS


@dataclass(frozen=True)
class RunSpec:
    """One ``--scores``: ``NAME=PATH`` (PATH is one system's run) or ``PATH`` (names from the file)."""

    name: str | None
    path: str

    @classmethod
    def parse(cls, text: str) -> RunSpec:
        name, sep, path = text.partition("=")
        if not sep or "://" in name:
            return cls(None, text.strip())
        if not name.strip() or not path.strip():
            raise InputError("--scores", f"expected NAME=PATH or PATH, got {text!r}")
        return cls(name.strip(), path.strip())


def check_distinct(specs: list[RunSpec]) -> None:
    """Two inputs with one system name (or one file twice) would merge or double-count a system."""
    names: dict[str, str] = {}
    paths: set[str] = set()
    for spec in specs:
        if spec.name is not None:
            if spec.name in names:
                raise InputError(
                    "--scores", f"system name {spec.name!r} given twice ({names[spec.name]} and {spec.path})"
                )
            names[spec.name] = spec.path
        if spec.path in paths:
            raise InputError("--scores", f"{spec.path} given twice")
        paths.add(spec.path)


def parquet_files(spec: RunSpec) -> tuple[pafs.FileSystem, list[str]]:
    """The Parquet files of a run spec (a file, or a folder of parts), checked for score columns."""
    fs, inner = resolve_uri(spec.path)
    info = fs.get_file_info(inner)
    if info.type == pafs.FileType.NotFound:
        raise InputError(spec.path, "file not found")
    files = (
        [inner]
        if info.type == pafs.FileType.File
        else sorted(
            f.path
            for f in fs.get_file_info(pafs.FileSelector(inner, recursive=True))
            if f.path.endswith(".parquet") and "/." not in f.path and "/_" not in f.path[len(inner) :]
        )
    )
    if not files:
        raise InputError(spec.path, "no Parquet files")
    for path in files:
        try:
            schema = pq.read_schema(path, filesystem=fs)
        except (pa.ArrowInvalid, OSError) as exc:
            shown = spec.path if info.type == pafs.FileType.File else path
            raise InputError(shown, f"not a Parquet file of scores ({str(exc).splitlines()[0]})") from None
        check_score_columns(spec.path, schema)
    return fs, files


def is_enriched_json(spec: RunSpec) -> bool:
    if spec.path.lower().endswith(".json"):
        if spec.name is None:
            raise InputError(spec.path, "an enriched JSON input needs a system name: --scores NAME=PATH")
        return True
    return False


def check_score_columns(path: str, schema: pa.Schema) -> None:
    required = [f.name for f in SOURCE_SCORES_SCHEMA if not f.nullable or f.name in DIMENSION_KEYS]
    missing = [name for name in required if name not in schema.names]
    if missing:
        raise InputError(path, f"missing score column(s) {', '.join(missing)}", field=missing[0])


def ray_summaries(
    specs: list[RunSpec],
    query_types: dict[str, str],
    config: ReduceConfig,
    ray_config: RayConfig | None,
    ranks: pa.Table | None = None,
) -> Iterator[pa.Table]:
    """Summaries computed by Ray Data tasks, in input order."""
    import ray
    from ray.data import DataContext

    ensure_ray(ray_config)
    options = DataContext.get_current().execution_options
    options.resource_limits = options.resource_limits.copy(
        object_store_memory=config.max_in_flight_mb * 2**20
    )
    options.preserve_order = True  # source_metrics rows and tie order follow the input
    datasets = []
    for spec in specs:
        if is_enriched_json(spec):  # already conformed by the import
            source = ray.data.from_arrow(load_enriched_scores(spec.path, spec.name, query_types))
            kwargs = {"name": None, "query_types": {}, "source": spec.path}
        else:
            fs, files = parquet_files(spec)
            source = ray.data.read_parquet(files, filesystem=fs)
            kwargs = {"name": spec.name, "query_types": query_types, "source": spec.path}
        datasets.append(
            source.map_batches(
                summarize_batch,
                batch_format="pyarrow",
                batch_size=config.batch_size,
                fn_kwargs={**kwargs, "policy": config.policy, "ranks": ranks},
            )
        )
    dataset = datasets[0].union(*datasets[1:]) if len(datasets) > 1 else datasets[0]
    yield from dataset.iter_batches(batch_format="pyarrow", batch_size=None)


def local_batches(
    specs: list[RunSpec], query_types: dict[str, str], batch_size: int
) -> Iterator[tuple[pa.Table, str | None, dict[str, str], str]]:
    """``(batch, name, query_types, source)`` arguments of :func:`summarize_batch`, read in this process."""
    for spec in specs:
        if is_enriched_json(spec):
            table = load_enriched_scores(spec.path, spec.name, query_types)
            for batch in table.to_batches(max_chunksize=batch_size):
                yield pa.Table.from_batches([batch]), None, {}, spec.path
            continue
        fs, files = parquet_files(spec)
        for path in files:
            with fs.open_input_file(path) as handle:
                for batch in pq.ParquetFile(handle).iter_batches(batch_size=batch_size):
                    yield pa.Table.from_batches([batch]), spec.name, query_types, spec.path


def local_summaries(
    specs: list[RunSpec], query_types: dict[str, str], config: ReduceConfig, ranks: pa.Table | None = None
) -> Iterator[pa.Table]:
    """Summaries computed by a thread pool in this process (Arrow kernels release the GIL), in order.

    At most two batches per thread are in flight, so memory does not grow with the input.
    """
    threads = config.local_threads or os.cpu_count() or 1
    with ThreadPoolExecutor(threads) as pool:
        window: deque[Future[pa.Table]] = deque()
        for batch, name, types, source in local_batches(specs, query_types, config.batch_size):
            window.append(pool.submit(summarize_batch, batch, name, types, config.policy, source, ranks))
            if len(window) >= 2 * threads:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


def use_ray(config: ReduceConfig, ray_config: RayConfig | None) -> bool:
    """Whether the reduce runs on Ray: asked for, or (``auto``) a cluster is connected or addressed."""
    if config.executor != "auto":
        return config.executor == "ray"
    ray = sys.modules.get("ray")  # not imported yet: not initialised either
    initialised = ray is not None and ray.is_initialized()
    return bool(initialised or (ray_config and ray_config.address) or os.environ.get("RAY_ADDRESS"))


def reduce_specs(
    specs: list[RunSpec],
    out_uri: str,
    config: ReduceConfig | None = None,
    query_metadata: str | None = None,
    ray_config: RayConfig | None = None,
    ranks: pa.Table | None = None,
) -> dict[str, Any]:
    """Reduce one or more runs into the leaderboard folder ``out_uri``; returns a summary.

    ``ranks`` (:mod:`jobs.leaderboard.ranks`) fills the six official rank columns.
    """
    config = config or ReduceConfig()
    check_distinct(specs)
    for spec in specs:  # fail on a wrong path before starting Ray
        fs, inner = resolve_uri(spec.path)
        if fs.get_file_info(inner).type == pafs.FileType.NotFound:
            raise InputError(spec.path, "file not found (--scores)")
        if not is_enriched_json(spec):
            parquet_files(spec)
    query_types = load_query_types(query_metadata)
    on_ray = use_ray(config, ray_config)
    summaries = (
        input_errors_unwrapped(ray_summaries(specs, query_types, config, ray_config, ranks))
        if on_ray
        else local_summaries(specs, query_types, config, ranks)
    )
    runs = [{"model_name": s.name, "score_file": s.path, "rank_file": None} for s in specs]
    summary = reduce_summaries(summaries, RunStore(out_uri), config, runs)
    return {**summary, "executor": "ray" if on_ray else "local"}


def reduce_summaries(
    summaries: Iterable[pa.Table], out: RunStore, config: ReduceConfig, runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Stream batch summaries to ``source_metrics`` (CSV + Parquet) and merge their partial sums."""
    started = time.monotonic()
    accumulator = LeaderboardAccumulator()
    rows = 0
    with (
        out.open_atomic(f"{LAYOUT.source_metrics}.csv") as csv_file,
        out.open_atomic(f"{LAYOUT.source_metrics}.parquet") as pq_file,
    ):
        csv_out = StreamingCsv(csv_file, SOURCE_METRICS_SCHEMA.names)
        with pq.ParquetWriter(pq_file, SOURCE_METRICS_SCHEMA, compression="zstd") as parquet_out:
            for block in summaries:
                for i in range(block.num_rows):
                    csv_out.write_bytes(block["csv"][i].as_buffer())
                    parquet_out.write_table(from_ipc(block["metrics_ipc"][i]))
                    partials = {g: from_ipc(block[c][i]) for g, c in PARTIAL_COLUMNS.items()}
                    accumulator.merge(partials, rows)
                    rows += block["num_rows"][i].as_py()
        csv_out.close()
    results = accumulator.results()
    add_intervals(results, accumulator, config)
    payload = leaderboard_payload(runs, results, {"policy": config.policy, "num_source_rows": rows})
    written = [
        f"{LAYOUT.source_metrics}.csv",
        f"{LAYOUT.source_metrics}.parquet",
        *write_leaderboard_files(out, results, payload),
    ]
    return {
        "sources": rows,
        "systems": len(results["overall"]),
        "files": written,
        "seconds": round(time.monotonic() - started, 3),
        "out": out.uri,
    }


def reduce_run(
    run_uri: str,
    config: ReduceConfig | None = None,
    ray_config: RayConfig | None = None,
    serp_systems: Sequence[str] = (),
) -> dict[str, Any]:
    """Reduce an audit run: ``<run>/scores/`` -> ``<run>/leaderboard/``.

    With SERP systems (the audit's ``inputs.serp``), the first by name fills the official rank
    columns from the run's citations.
    """
    store = RunStore(run_uri)
    spec = RunSpec(None, store.uri_of(LAYOUT.scores))
    ranks = audit_ranks(store, sorted(serp_systems)[0]) if serp_systems else None
    return reduce_specs([spec], store.uri_of(LAYOUT.leaderboard), config, ray_config=ray_config, ranks=ranks)


def audit_ranks(store: RunStore, serp_system: str) -> pa.Table:
    """The rank columns of an audit run's scored sources against one of its SERP systems."""
    columns = ["model_name", "query_id", "agg_source_id", "source_url"]
    sources = (
        store.read_table(LAYOUT.scores).select(columns).to_pandas().rename(columns={"source_url": "url"})
    )
    citations = store.read_table(LAYOUT.citations).to_pandas()
    serp = citations[citations["system"] == serp_system]
    return rank_metrics(sources, serp, serp_system, citation_counts(citations))


def input_ranks(specs: list[RunSpec], serp: str, query_types: dict[str, str]) -> pa.Table:
    """The rank columns of ``--scores`` inputs against a SERP file given as ``NAME=PATH``."""
    name, _, path = serp.partition("=")
    if not name.strip() or not path.strip():
        raise InputError("--serp", f"expected NAME=PATH, got {serp!r}")
    columns = ["model_name", "query_id", "agg_source_id", "source_url"]
    frames = []
    for spec in specs:
        if is_enriched_json(spec):
            table = load_enriched_scores(spec.path, spec.name, query_types).select(columns)
        else:
            fs, files = parquet_files(spec)
            table = pa.concat_tables([pq.read_table(f, columns=columns, filesystem=fs) for f in files])
            if spec.name is not None:
                table = table.set_column(0, "model_name", pa.array([spec.name] * table.num_rows, pa.string()))
        frames.append(table.to_pandas())
    sources = pd.concat(frames, ignore_index=True).rename(columns={"source_url": "url"})
    rows = load_serp(path.strip(), name.strip()).to_pandas()
    return rank_metrics(sources, rows, name.strip())


def print_leaderboard(rows: list[dict[str, Any]]) -> None:
    """Print the overall leaderboard as an aligned text table."""
    print(f"{'rank':>4}  {'system':<28} {'weighted':>9} {'unweighted':>10} {'sources':>8} {'queries':>7}")
    for rank, row in enumerate(rows, start=1):
        weighted = row["weighted_total_content_score"]
        unweighted = row["unweighted_mean_score"]
        print(
            f"{rank:>4}  {row['model_name']:<28} {weighted:>9.3f} "
            f"{(unweighted if unweighted is not None else float('nan')):>10.3f} "
            f"{row['num_sources']:>8} {row['num_queries']:>7}"
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scores",
        dest="inputs",
        action="append",
        metavar="NAME=PATH",
        help="a system's enriched JSON or score Parquet (required, repeatable); PATH alone keeps the file's "
        "system names",
    )
    parser.add_argument(
        "--run", dest="inputs", action=Deprecated, new="--scores", help="deprecated spelling of --scores"
    )
    parser.add_argument("--query-metadata", help="queries CSV (query_id,query,query_type) for query types")
    parser.add_argument("--out", required=True, help="output folder (local or s3://)")
    parser.add_argument(
        "--policy",
        choices=["official", "complete"],
        default="official",
        help="official: a missing dimension counts 0 in the weighted total (compute_metrics.py); "
        "complete: sources with a missing dimension are left out of every aggregate",
    )
    parser.add_argument(
        "--bootstrap", type=nonnegative_int, default=1000, help="query-bootstrap replicates (0: none)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument(
        "--executor",
        choices=["auto", "ray", "local"],
        default="auto",
        help="ray (Ray Data), local (threads, no Ray start-up) or auto: ray when a cluster is addressed",
    )
    parser.add_argument(
        "--serp",
        metavar="NAME=PATH",
        help="a search engine's ranked results (CSV query_id,rank,url, JSONL or JSON; docs/collect.md): "
        "fills the six official rank/overlap columns (jobs.leaderboard.ranks)",
    )
    parser.add_argument("--ray-address", help="Ray cluster address (default: $RAY_ADDRESS or local)")
    add_set_argument(parser, "batch_size=8192")


def run(args: argparse.Namespace) -> int:
    if not args.inputs:
        raise InputError("--scores", "give at least one --scores NAME=PATH (or PATH)")
    settings = {
        "policy": args.policy,
        "executor": args.executor,
        "bootstrap_replicates": args.bootstrap,
        "bootstrap_seed": args.seed,
    }
    for assignment in args.overrides:
        apply_override(settings, assignment)
    config = validate_model(ReduceConfig, settings, "command line")
    specs = [RunSpec.parse(text) for text in args.inputs]
    ranks = input_ranks(specs, args.serp, load_query_types(args.query_metadata)) if args.serp else None
    summary = reduce_specs(
        specs, args.out, config, args.query_metadata, RayConfig(address=args.ray_address), ranks
    )
    store = RunStore(args.out)
    print_leaderboard(store.read_json(LAYOUT.leaderboard_data)["overall"])
    print(
        f"reduced {summary['sources']} sources of {summary['systems']} systems -> {store.uri} "
        f"({summary['seconds']} s, {summary['executor']} executor)"
    )
    return 0


if __name__ == "__main__":
    from jobs.cli import run_module

    run_module("reduce")
