"""Benchmark: our reduce (from Parquet) vs an official-style reduce (enriched JSON, Python loops).

Both run in the same invocation on the same synthetic sources (12 systems by default), each in its
own subprocess whose whole process tree (Ray workers included) is sampled for memory (PSS). Ours
is also run on a quarter of the sources: equal peak memory at both sizes shows that it streams.
The leaderboards of all runs are compared (weighted score per system to 1e-9).

Ours runs with each executor (same per-batch code, same output files):
- ``local`` (``speedup``): a fresh process with a thread pool, as ``sourcebench reduce`` runs on a
  laptop when no Ray cluster is addressed; measured like the baseline, a fresh process.
- ``ray`` against a running Ray head (``speedup_ray_warm_cluster``: how a cluster runs it under
  ``ray job submit``; the job's workers start per job) and starting its own local Ray
  (``speedup_ray_cold_local``).
Last line of output: one JSON object with ``speedup``, ``peak_rss_mb`` (local executor, whole
process tree PSS, at full and at a quarter of the sources), the Ray figures and details.

Usage: python bench/reduce.py [--sources 1000000] [--systems 12] [--queries 100]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jobs.schemas import SOURCE_SCORES_SCHEMA  # noqa: E402
from judge.rubric import DIMENSION_KEYS  # noqa: E402

TYPES = ["VACOS", "DebateQA", "HotpotQA", "Pinocchios", "QuoraQuestions"]


def synthetic_scores(n_sources: int, n_systems: int, n_queries: int, seed: int = 0) -> pa.Table:
    """Random sources: integer scores 1-5 with 3% missing, systems with different quality levels."""
    rng = np.random.default_rng(seed)
    system = rng.integers(0, n_systems, n_sources)
    query = rng.integers(1, n_queries + 1, n_sources)
    level = 2.5 + 2.0 * system / max(n_systems - 1, 1)
    columns = {
        "model_name": pa.array([f"system-{i:02d}" for i in range(n_systems)]).take(pa.array(system)),
        "query_id": pa.array(query.astype(str)),
        "query_type": pa.array(TYPES).take(pa.array(query % len(TYPES))),
        "agg_source_id": pa.array(np.arange(n_sources).astype(str)),
        "source_url": pa.array([f"https://s{i % 5000}.example/p{i}" for i in range(n_sources)]),
        "text_content_length": pa.array(rng.integers(100, 20000, n_sources).astype(float)),
        "language": pa.nulls(n_sources, pa.string()),
    }
    for key in DIMENSION_KEYS:
        values = np.clip(np.rint(rng.normal(level, 1.0)), 1, 5)
        columns[key] = pa.array(values, mask=rng.random(n_sources) < 0.03)
    return pa.table(columns).select(SOURCE_SCORES_SCHEMA.names).cast(SOURCE_SCORES_SCHEMA)


def write_enriched_json(table: pa.Table, out_dir: Path) -> list[str]:
    """One official enriched JSON per system (query records with aggregated_sources)."""
    specs = []
    frame = table.to_pandas()
    for system, rows in frame.groupby("model_name", sort=True):
        path = out_dir / f"{system}.enriched.json"
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("[")
            for i, (query_id, qrows) in enumerate(rows.groupby("query_id", sort=False)):
                sources = [
                    {
                        "agg_source_id": r.agg_source_id,
                        "url_canonical": r.source_url,
                        "text_content_length": r.text_content_length,
                        "content_vector": {
                            k: (None if np.isnan(getattr(r, k)) else int(getattr(r, k)))
                            for k in DIMENSION_KEYS
                        },
                    }
                    for r in qrows.itertuples()
                ]
                record = {
                    "query_id": query_id,
                    "query_type": qrows.query_type.iloc[0],
                    "aggregated_sources": sources,
                }
                handle.write(("," if i else "") + json.dumps(record))
            handle.write("]")
        specs.append(f"{system}={path}")
    return specs


def tree_memory(root: psutil.Process) -> tuple[int, int]:
    """(PSS of the whole process tree, RSS of the root) in bytes.

    PSS (proportional set size) shares each shared page among the processes that map it, so Ray's
    shared-memory object store is counted once rather than once per worker.
    """
    procs = [root, *root.children(recursive=True)]
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total, root.memory_info().rss


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run a command; wall seconds and peak memory (MB) of its process tree, sampled every 50 ms.

    Against a running Ray head (``env`` with RAY_ADDRESS) the job's Ray workers are the head's
    children, not the command's: their memory is not in the tree, so the driver alone is reported.
    """
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        env=dict(os.environ, **(env or {})),
    )
    root = psutil.Process(proc.pid)
    peak_tree = peak_root = 0
    while proc.poll() is None:
        try:
            tree, rss = tree_memory(root)
            peak_tree, peak_root = max(peak_tree, tree), max(peak_root, rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
        time.sleep(0.05)
    output = proc.stdout.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{output[-3000:]}")
    return {
        "seconds": time.perf_counter() - started,
        "peak_rss_mb": peak_tree / 2**20,
        "peak_driver_rss_mb": peak_root / 2**20,
    }


class RayHead:
    """A Ray head on loopback for the warm-cluster measurement (``ray job submit`` connects to one).

    Started with ``--block`` so that stopping this one process stops its whole node and no other Ray.
    """

    def __init__(self, temp_dir: Path):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_AUTH_MODE="disabled")
        ray_bin = str(Path(sys.executable).parent / "ray")
        self.proc = subprocess.Popen(
            [
                ray_bin,
                "start",
                "--block",
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={self.port}",
                "--include-dashboard=false",
                "--num-cpus=2",
                f"--temp-dir={temp_dir}",
                "--disable-usage-stats",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.env = {"RAY_ADDRESS": f"127.0.0.1:{self.port}", "RAY_AUTH_MODE": "disabled"}
        deadline = time.monotonic() + 120
        while (
            subprocess.run(
                [ray_bin, "status", f"--address=127.0.0.1:{self.port}"], env=env, capture_output=True
            ).returncode
            != 0
        ):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("ray head did not start")
            time.sleep(1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def overall_scores(path: Path) -> dict[str, float]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {
            row["model_name"]: float(row["weighted_total_content_score"]) for row in csv.DictReader(handle)
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=1_000_000)
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="sb-bench-reduce-") as tmp:
        work = Path(tmp)
        table = synthetic_scores(args.sources, args.systems, args.queries)
        # Row groups of 64k rows, as the project's own writers produce, so Ray can split the file.
        pq.write_table(table, work / "scores.parquet", row_group_size=65536)
        pq.write_table(
            table.slice(0, args.sources // 4), work / "scores-quarter.parquet", row_group_size=65536
        )
        specs = write_enriched_json(table, work)
        print(f"data: {args.sources} sources, {args.systems} systems, {args.queries} queries", flush=True)

        def ours_cmd(scores: str, out: str, executor: str) -> list[str]:
            return [
                sys.executable,
                "-m",
                "jobs.reduce",
                "--scores",
                str(work / scores),
                "--out",
                str(work / out),
                f"--executor={executor}",
            ]

        def report(label: str, result: dict, memory: str = "tree PSS") -> None:
            mb = result["peak_rss_mb"] if memory == "tree PSS" else result["peak_driver_rss_mb"]
            print(f"{label:<32} {result['seconds']:6.1f} s, {memory} {mb:.0f} MB", flush=True)

        ours = run_measured(ours_cmd("scores.parquet", "ours", "local"))
        report("ours, local executor:", ours)
        quarter = run_measured(ours_cmd("scores-quarter.parquet", "quarter", "local"))
        report("ours, local, 1/4 sources:", quarter)
        # Ray, cold: the job starts its own local Ray; its process tree holds every Ray process.
        cold = run_measured(ours_cmd("scores.parquet", "cold", "ray"))
        report("ours, Ray, own local Ray:", cold)
        # Ray, warm: a running Ray head, as under `ray job submit` on a cluster.
        head = RayHead(work / "ray")
        try:
            run_measured(ours_cmd("scores-quarter.parquet", "warmup", "ray"), head.env)
            warm = run_measured(ours_cmd("scores.parquet", "warm", "ray"), head.env)
        finally:
            head.stop()
        report("ours, Ray, running head:", warm, "driver RSS")
        baseline = run_measured(
            [sys.executable, str(REPO / "bench" / "baseline_reduce.py"), str(work / "base"), *specs]
        )
        report("baseline:", baseline)

        ours_scores = overall_scores(work / "ours" / "leaderboard_overall.csv")
        for other in ("cold", "warm"):
            assert ours_scores == overall_scores(work / other / "leaderboard_overall.csv"), other
        base_scores = overall_scores(work / "base" / "leaderboard_overall.csv")
        max_diff = max(abs(ours_scores[k] - base_scores[k]) for k in base_scores)
        assert ours_scores.keys() == base_scores.keys() and max_diff < 1e-9, max_diff

    print(
        json.dumps(
            {
                "benchmark": "reduce",
                "sources": args.sources,
                "systems": args.systems,
                "speedup": round(baseline["seconds"] / ours["seconds"], 2),
                "speedup_ray_warm_cluster": round(baseline["seconds"] / warm["seconds"], 2),
                "speedup_ray_cold_local": round(baseline["seconds"] / cold["seconds"], 2),
                "ours_seconds": round(ours["seconds"], 2),
                "ours_ray_warm_seconds": round(warm["seconds"], 2),
                "ours_ray_cold_seconds": round(cold["seconds"], 2),
                "baseline_seconds": round(baseline["seconds"], 2),
                "peak_rss_mb": round(ours["peak_rss_mb"], 1),
                "peak_rss_mb_quarter_sources": round(quarter["peak_rss_mb"], 1),
                "peak_rss_mb_ray_cold": round(cold["peak_rss_mb"], 1),
                "peak_driver_rss_mb_ray_warm": round(warm["peak_driver_rss_mb"], 1),
                "baseline_peak_rss_mb": round(baseline["peak_rss_mb"], 1),
                "max_abs_diff_vs_baseline": max_diff,
            }
        )
    )


if __name__ == "__main__":
    main()
