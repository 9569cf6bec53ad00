"""``sourcebench costbench``: judge a sample of a run's pages and project the cost of 1M pages.

Examples::

    sourcebench costbench --run runs/a1 --config judge.yaml --sample 200 --gpu-hour-price 2.5 --gpus 1
    sourcebench costbench --run runs/a1 --engine openai --model qwen-plus \\
        --price-per-1m-input 0.4 --price-per-1m-cached 0.08 --price-per-1m-output 1.2

The sample (the first ``--sample`` pages by url_key, with every query that cites them) is judged
into ``<run>/costbench/<label>/`` so the run's own judgments are untouched. From the measured
accounting it reports tokens per page per stage (prompt, cached, prefilled, output), the prefix
cache hit rate, judgments per second, and projects GPU-hours (``wall time x GPUs``) and money per
1M pages, from a GPU-hour price or from per-token prices. Written to
``<run>/costbench/<label>/report.json`` and printed. The wall time includes the engine start, so a
larger sample gives a less pessimistic projection.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from crawler.errors import InputError
from crawler.storage import RunStore
from jobs.cli import nonnegative_float, positive_float, positive_int, run_module
from jobs.judge import add_arguments as add_judge_arguments
from jobs.judge import load_judge_config, read_requests, requests_from_run
from jobs.ray_runtime import RayConfig, ensure_ray
from judge import accounting, judge_pairs, judge_run, page_index, read_judgments
from judge.rubric import STAGES
from judge.run import validate_requests

PAGES_PER_PROJECTION = 1_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_judge_arguments(parser, rescore=False)
    parser.add_argument(
        "--sample", type=positive_int, default=100, help="Pages to judge for the measurement."
    )
    parser.add_argument("--label", default="sample", help="Name of the costbench run under <run>/costbench/.")
    parser.add_argument(
        "--gpu-hour-price", type=nonnegative_float, help="Price of one GPU-hour (vllm engine)."
    )
    parser.add_argument("--gpus", type=positive_float, default=1.0, help="GPUs the measured engine occupied.")
    parser.add_argument(
        "--price-per-1m-input", type=nonnegative_float, help="Price per 1M uncached prompt tokens."
    )
    parser.add_argument(
        "--price-per-1m-cached", type=nonnegative_float, help="Price per 1M cached prompt tokens."
    )
    parser.add_argument("--price-per-1m-output", type=nonnegative_float, help="Price per 1M output tokens.")


def per_page(totals: dict[str, Any], pages: int) -> dict[str, float]:
    """Token means per page (over all its queries) for one accounting entry."""
    keys = ("prompt_tokens", "cached_prompt_tokens", "prefill_tokens", "output_tokens")
    return {k: round(totals[k] / pages, 1) if pages else 0.0 for k in keys}


def project(table: pa.Table, wall_s: float, gpus: float, prices: dict[str, float | None]) -> dict[str, Any]:
    """Per-page tokens per stage, cache hit rate, throughput and the 1M-page projection."""
    judged = table.filter(pc.not_equal(table["status"], "skipped"))
    pages = len(pc.unique(judged["url_key"])) if judged.num_rows else 0
    totals = accounting(table)
    scale = PAGES_PER_PROJECTION / pages if pages else 0.0
    report: dict[str, Any] = {
        "pages": pages,
        "judgments": judged.num_rows,
        "queries_per_page": round(judged.num_rows / len(STAGES) / pages, 3) if pages else 0.0,
        "tokens_per_page": {s: per_page(totals[s], pages) for s in ("total", *STAGES)},
        "prefix_cache_hit_rate": round(totals["total"]["prefix_cache_hit_rate"], 4),
        "wall_s": round(wall_s, 3),
        "judgments_per_s": round(judged.num_rows / wall_s, 3) if wall_s else None,
        "pages_per_hour": round(pages / wall_s * 3600, 1) if wall_s else None,
    }
    gpu_hours = wall_s / 3600 * gpus * scale
    report["per_1m_pages"] = {
        "gpu_hours": round(gpu_hours, 2),
        "prompt_tokens": round(totals["total"]["prompt_tokens"] * scale),
        "prefill_tokens": round(totals["total"]["prefill_tokens"] * scale),
        "output_tokens": round(totals["total"]["output_tokens"] * scale),
    }
    if prices.get("gpu_hour") is not None:
        report["per_1m_pages"]["cost_gpu"] = round(gpu_hours * prices["gpu_hour"], 2)
    if prices.get("input") is not None:
        cached_price = prices.get("cached") if prices.get("cached") is not None else prices["input"]
        t = totals["total"]
        cost = (t["prefill_tokens"] * prices["input"] + t["cached_prompt_tokens"] * cached_price
                + t["output_tokens"] * (prices.get("output") or 0.0)) / 1e6 * scale  # fmt: skip
        report["per_1m_pages"]["cost_tokens"] = round(cost, 2)
    return report


def sample_requests(requests: pa.Table, pages: int) -> pa.Table:
    keys = sorted(set(requests["url_key"].to_pylist()))[:pages]
    return requests.filter(pc.is_in(requests["url_key"], pa.array(keys, pa.string())))


def run(args: argparse.Namespace) -> int:
    try:
        config = load_judge_config(args)
        store = RunStore(args.run)
        requests = read_requests(args.requests) if args.requests else requests_from_run(store)
        requests = sample_requests(judge_pairs(validate_requests(requests), page_index(store)), args.sample)
        if not requests.num_rows:
            raise InputError(store.uri_of(), "no requests to sample", field="--sample")
        bench = RunStore(store.uri_of("costbench", args.label))
        keys = pa.array(sorted(set(requests["url_key"].to_pylist())), pa.string())
        pages = store.read_table("pages")
        bench.write_table("pages/part-00000.parquet", pages.filter(pc.is_in(pages["url_key"], keys)))
        if config.engine == "vllm":
            ensure_ray(RayConfig(num_cpus=args.num_cpus))
        started = time.perf_counter()
        summary = judge_run(bench.uri, requests, config)
        wall = time.perf_counter() - started
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    prices = {"gpu_hour": args.gpu_hour_price, "input": args.price_per_1m_input,
              "cached": args.price_per_1m_cached, "output": args.price_per_1m_output}  # fmt: skip
    report = {
        "engine": summary["engine"],
        "model": summary["model"],
        "prompt_layout": summary["prompt_layout"],
        "measured_new_judgments": summary["judged"],
        **project(read_judgments(bench.uri), wall, args.gpus, prices),
    }
    if summary["judged"] == 0:
        report["note"] = "every judgment came from an earlier costbench run: wall time measures no work"
    bench.write_json("report.json", report)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    run_module("costbench")
