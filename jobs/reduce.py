"""Reduce per-source scores to the official leaderboard files, with Ray Data.

Ray Data reads the score Parquet (or an imported enriched JSON) and computes per-source metrics in
its workers; the driver streams the result once, writing ``source_metrics`` (CSV + Parquet) and
folding each batch into per-group partial sums, so memory depends on the number of groups, not on
the number of sources. Usage::

    sourcebench reduce --run gpt5=gpt5.enriched.json --run tavily=tavily.enriched.json \\
        --query-metadata queries.csv --out leaderboard/
    ray job submit --working-dir . -- python -m jobs.reduce --run scores.parquet --out s3://b/lb
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pydantic import BaseModel, Field
from ray.data import DataContext

from crawler.errors import InputError
from crawler.storage import RunStore, resolve_uri
from jobs.inputs import load_enriched_scores, load_query_types, official_score
from jobs.leaderboard.aggregate import LeaderboardAccumulator
from jobs.leaderboard.intervals import add_intervals
from jobs.leaderboard.metrics import SOURCE_METRICS_SCHEMA, add_source_metrics, included_mask
from jobs.leaderboard.writers import StreamingCsv, csv_rows, leaderboard_payload, write_leaderboard_files
from jobs.ray_runtime import RayConfig, ensure_ray
from jobs.schemas import SOURCE_SCORES_SCHEMA
from judge.rubric import DIMENSION_KEYS


class ReduceConfig(BaseModel):
    """How sources are reduced to leaderboards."""

    policy: Literal["official", "complete"] = Field(
        default="official",
        description="official: every source counts, a missing score is 0 in the weighted total and "
        "skipped in the unweighted mean (compute_metrics.py); complete: sources with any missing "
        "dimension are left out of every aggregate (they stay in source_metrics).",
    )
    batch_size: int = Field(default=65536, gt=0, description="Rows per Ray Data batch.")
    max_in_flight_mb: int = Field(
        default=512,
        gt=0,
        description="Object-store memory Ray Data may hold for in-flight batches (streaming bound).",
    )
    bootstrap_replicates: int = Field(default=1000, ge=0, description="Query-bootstrap replicates (0: none).")
    bootstrap_seed: int = Field(default=0, description="Seed of the query bootstrap.")
    confidence_level: float = Field(default=0.95, gt=0, lt=1, description="Coverage of the intervals.")


@dataclass(frozen=True)
class RunSpec:
    """One ``--run`` argument: ``NAME=PATH`` (PATH is one system's run) or ``PATH`` (names from the file)."""

    name: str | None
    path: str

    @classmethod
    def parse(cls, text: str) -> RunSpec:
        name, sep, path = text.partition("=")
        if not sep or "://" in name:
            return cls(None, text.strip())
        if not name.strip() or not path.strip():
            raise InputError(text, "a --run must be NAME=PATH or PATH", field="--run")
        return cls(name.strip(), path.strip())


def score_dataset(spec: RunSpec, query_types: dict[str, str], batch_size: int):
    """A Ray dataset of SOURCE_SCORES rows for one run spec."""
    import ray

    if spec.path.lower().endswith(".json"):
        if spec.name is None:
            raise InputError(spec.path, "an enriched JSON run needs a system name: NAME=PATH", field="--run")
        return ray.data.from_arrow(load_enriched_scores(spec.path, spec.name, query_types))
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
    check_score_columns(spec.path, pq.read_schema(files[0], filesystem=fs))
    name = spec.name

    def conform(batch: pa.Table) -> pa.Table:
        return conform_scores(batch, name, query_types)

    return ray.data.read_parquet(files, filesystem=fs).map_batches(
        conform, batch_format="pyarrow", batch_size=batch_size
    )


def check_score_columns(path: str, schema: pa.Schema) -> None:
    required = [f.name for f in SOURCE_SCORES_SCHEMA if not f.nullable or f.name in DIMENSION_KEYS]
    missing = [name for name in required if name not in schema.names]
    if missing:
        raise InputError(path, f"missing score column(s) {', '.join(missing)}", field=missing[0])


def conform_scores(batch: pa.Table, name: str | None, query_types: dict[str, str]) -> pa.Table:
    """Cast one batch to SOURCE_SCORES_SCHEMA: rename the system, fill query types, coerce scores."""
    columns = {}
    for field in SOURCE_SCORES_SCHEMA:
        column = batch.column(field.name) if field.name in batch.column_names else None
        if field.name == "model_name" and name is not None:
            column = pa.array([name] * batch.num_rows, pa.string())
        elif column is None:
            column = pa.nulls(batch.num_rows, field.type)
        elif field.type == pa.float64() and not pa.types.is_floating(column.type):
            column = pa.array([official_score(v) for v in column.to_pylist()], pa.float64())
        columns[field.name] = column.cast(field.type)
    if query_types:
        ids, types = columns["query_id"].to_pylist(), columns["query_type"].to_pylist()
        filled = [
            t if t not in (None, "", "Unknown") else query_types.get(q, "Unknown")
            for q, t in zip(ids, types, strict=True)
        ]
        columns["query_type"] = pa.array(filled, pa.string())
    return pa.table(columns, schema=SOURCE_SCORES_SCHEMA)


def reduce_specs(
    specs: list[RunSpec],
    out_uri: str,
    config: ReduceConfig | None = None,
    query_metadata: str | None = None,
    ray_config: RayConfig | None = None,
) -> dict[str, Any]:
    """Reduce one or more runs into the leaderboard folder ``out_uri``; returns a summary."""
    config = config or ReduceConfig()
    for spec in specs:  # fail on a wrong path before starting Ray
        fs, inner = resolve_uri(spec.path)
        if fs.get_file_info(inner).type == pafs.FileType.NotFound:
            raise InputError(spec.path, "file not found", field="--run")
    ensure_ray(ray_config)
    options = DataContext.get_current().execution_options
    options.resource_limits = options.resource_limits.copy(
        object_store_memory=config.max_in_flight_mb * 2**20
    )
    query_types = load_query_types(query_metadata)
    datasets = [score_dataset(spec, query_types, config.batch_size) for spec in specs]
    dataset = datasets[0].union(*datasets[1:]) if len(datasets) > 1 else datasets[0]
    runs = [{"model_name": s.name, "score_file": s.path, "rank_file": None} for s in specs]
    return reduce_dataset(dataset, RunStore(out_uri), config, runs)


def summarize_batch(batch: pa.Table) -> pa.Table:
    """Worker side: per-source metrics of one batch, as Arrow IPC plus their CSV text (one row)."""
    metrics = add_source_metrics(batch).cast(SOURCE_METRICS_SCHEMA)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, SOURCE_METRICS_SCHEMA) as writer:
        writer.write_table(metrics)
    return pa.table(
        {
            "metrics_ipc": pa.array([sink.getvalue().to_pybytes()], pa.large_binary()),
            "csv": pa.array([csv_rows(metrics)], pa.large_binary()),
        }
    )


def reduce_dataset(
    dataset, out: RunStore, config: ReduceConfig, runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Stream source metrics computed in Ray workers to ``source_metrics`` and aggregate them in one pass."""
    started = time.monotonic()
    summaries = dataset.map_batches(summarize_batch, batch_format="pyarrow", batch_size=config.batch_size)
    accumulator = LeaderboardAccumulator()
    rows = 0
    with (
        out.open_atomic("source_metrics.csv") as csv_file,
        out.open_atomic("source_metrics.parquet") as pq_file,
    ):
        csv_out = StreamingCsv(csv_file, SOURCE_METRICS_SCHEMA.names)
        with pq.ParquetWriter(pq_file, SOURCE_METRICS_SCHEMA, compression="zstd") as parquet_out:
            for summary in summaries.iter_batches(batch_format="pyarrow", batch_size=1):
                table = pa.ipc.open_stream(summary["metrics_ipc"][0].as_py()).read_all()
                csv_out.write_bytes(summary["csv"][0].as_py())
                parquet_out.write_table(table)
                keep = included_mask(table, config.policy)
                seq = pa.array(range(rows, rows + table.num_rows), pa.int64())
                accumulator.update(table.filter(keep), seq.filter(keep))
                rows += table.num_rows
        csv_out.close()
    results = accumulator.results()
    add_intervals(results, accumulator, config)
    payload = leaderboard_payload(runs, results, {"policy": config.policy, "num_source_rows": rows})
    written = [
        "source_metrics.csv",
        "source_metrics.parquet",
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
    run_uri: str, config: ReduceConfig | None = None, ray_config: RayConfig | None = None
) -> dict[str, Any]:
    """Reduce an audit run: ``<run>/scores/`` -> ``<run>/leaderboard/``."""
    store = RunStore(run_uri)
    spec = RunSpec(None, store.uri_of("scores"))
    return reduce_specs([spec], store.uri_of("leaderboard"), config, ray_config=ray_config)


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
        "--run",
        action="append",
        required=True,
        metavar="NAME=PATH",
        help="a system's enriched JSON or score Parquet; PATH alone keeps the file's system names",
    )
    parser.add_argument("--query-metadata", help="queries CSV (query_id,query,query_type) for query types")
    parser.add_argument("--out", required=True, help="output folder (local or s3://)")
    parser.add_argument("--policy", choices=["official", "complete"], default="official")
    parser.add_argument("--bootstrap", type=int, default=1000, help="query-bootstrap replicates (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--ray-address", help="Ray cluster address (default: $RAY_ADDRESS or local)")


def run(args: argparse.Namespace) -> int:
    config = ReduceConfig(policy=args.policy, bootstrap_replicates=args.bootstrap, bootstrap_seed=args.seed)
    summary = reduce_specs(
        [RunSpec.parse(text) for text in args.run],
        args.out,
        config,
        args.query_metadata,
        RayConfig(address=args.ray_address),
    )
    store = RunStore(args.out)
    print_leaderboard(store.read_json("leaderboard_data.json")["overall"])
    print(
        f"reduced {summary['sources']} sources of {summary['systems']} systems -> {store.uri} "
        f"({summary['seconds']} s)"
    )
    return 0


if __name__ == "__main__":
    from jobs.cli import run_module

    run_module("reduce")
