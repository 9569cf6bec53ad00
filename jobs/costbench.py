"""``sourcebench costbench``: time a judge on samples of a run's pages and project the cost of 1M pages.

Examples::

    sourcebench costbench --run runs/a1 --sample 50 100                      # signals: CPU core-hours
    sourcebench costbench --run runs/a1 --config judge.yaml --gpu-hour-price 2.5 --projected-workers 8
    sourcebench costbench --run runs/a1 --config judge.yaml --compare-layouts   # paper vs shared
    sourcebench costbench --run runs/a1 --engine openai --model qwen-plus --rate-limit-rpm 600 \\
        --price-per-1m-input 0.4 --price-per-1m-cached 0.08 --price-per-1m-output 1.2

The sampled pages (``sample_requests``: the first pages by url_key, with every query that cites
them) are split into a warm-up group and one group per ``--sample`` size, each with a similar mix of
page lengths, and judged one group after the other into ``<run>/costbench/<label>/<layout>/<group>/``,
so the run's own judgments are untouched. The warm-up pays the start-up (model load, engine start);
the timed groups give the steady per-page rate at each size, and their spread shows whether the
estimate is stable (``judge.cost.steady_state``). The projection for 1M pages is the steady rate
plus one start-up per ``--projected-workers``, in the unit that bills the engine:

- ``signals``: CPU core-hours (CPU seconds of this process, all threads);
- ``vllm``: GPU-hours (wall time x ``--gpus``) and node-hours (``--gpus-per-node``), plus a GPU
  projection from the token counts (``judge.cost.GpuThroughput``: a roofline for H200 unless
  ``--gpu-prefill-tokens-per-s``/``--gpu-decode-tokens-per-s`` give measured figures);
- ``openai``: money from token prices, requests and tokens per minute, and hours at the
  endpoint's rate limits.

Every figure of ``per_1m_pages`` is explained in the report's ``counts``. Written to
``<run>/costbench/<label>/report.json`` and printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ConfigDict, Field, field_validator, model_validator

from crawler.base import ConfigModel, InputError, RunStore, validate_model
from crawler.layout import LAYOUT
from crawler.runner import pages_dataset
from crawler.stagetimes import cpu_seconds
from jobs.cli import run_module
from jobs.judge import add_arguments as add_judge_arguments
from jobs.judge import load_judge_config, read_requests
from jobs.ray_runtime import RayConfig, ensure_ray
from judge import JudgeConfig, accounting, judge_pairs, judge_run, page_index, read_judgments
from judge.cost import (
    PAGES_PER_PROJECTION,
    VLLM_MAX_NUM_SEQS,
    GpuThroughput,
    RequestShape,
    SteadyState,
    Timing,
    gpu_hours_per_1m_pages,
    steady_state,
)
from judge.packet import PagePacket
from judge.rubric import STAGES
from judge.signals.engine import embedded_text
from judge.signals.relevance import passages

#: The runs of one measurement, in order: cold start, warm repeat, then the timed sizes.
_WARMUP_GROUPS = ("cold", "warm")
#: Option fields whose flag is not their name: ``--workers`` is the judge's (unit workers at once).
_OPTION_FLAGS = {"workers": "projected_workers"}


class CostbenchOptions(ConfigModel):
    """What to time and how to price it (from the command line)."""

    model_config = ConfigDict(frozen=True)

    sample: list[int] = Field([50, 100], description="Timed sample sizes in pages (two or more).")
    warmup: int = Field(5, ge=1, description="Pages of each of the two warm-up runs (cold, then warm).")
    workers: int = Field(
        1, ge=1, description="Workers (engine replicas) of the projected job: one start each."
    )
    compare_layouts: bool = Field(
        False, description="Time the paper and the shared layout on the same pages."
    )
    gpus: float = Field(1.0, gt=0, description="GPUs the measured vllm engine held.")
    gpus_per_node: int = Field(8, ge=1, description="GPUs of one node (node-hours = GPU-hours / this).")
    cpus_per_node: int | None = Field(None, ge=1, description="CPU cores of one GPU node (its core-hours).")
    core_hour_price: float | None = Field(None, ge=0, description="Price of one CPU core-hour (signals).")
    gpu_hour_price: float | None = Field(None, ge=0, description="Price of one GPU-hour (vllm).")
    price_per_1m_input: float | None = Field(None, ge=0, description="Price per 1M uncached prompt tokens.")
    price_per_1m_cached: float | None = Field(None, ge=0, description="Price per 1M cached prompt tokens.")
    price_per_1m_output: float | None = Field(None, ge=0, description="Price per 1M output tokens.")
    rate_limit_rpm: float | None = Field(
        None, gt=0, description="The endpoint's limit of requests per minute."
    )
    rate_limit_tpm: float | None = Field(None, gt=0, description="The endpoint's limit of tokens per minute.")
    gpu: GpuThroughput = Field(
        default_factory=GpuThroughput, description="GPU throughputs of the vllm GPU projection."
    )

    @field_validator("sample")
    @classmethod
    def _two_sizes(cls, value: list[int]) -> list[int]:
        sizes = sorted(set(value))
        if len(sizes) < 2 or sizes[0] < 1:
            raise ValueError("give at least two different positive sample sizes, e.g. --sample 50 100")
        return sizes

    @model_validator(mode="after")
    def _larger_than_warmup(self) -> CostbenchOptions:
        if self.sample[0] <= self.warmup:
            raise ValueError(f"every --sample size must exceed --warmup ({self.warmup})")
        return self


#: GpuThroughput fields that have a flag of their own.
_GPU_FLAGS = {"gpu_name": "gpu", "gpu_prefill_tokens_per_s": "prefill_tokens_per_s",
              "gpu_decode_tokens_per_s": "decode_tokens_per_s",
              "gpu_decode_weight_share": "decode_weight_share"}  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The judge's flags, --label, and one flag per CostbenchOptions field (its description is the help)."""
    add_judge_arguments(parser, rescore=False)
    parser.add_argument("--label", default="sample", help="Name of the costbench run under <run>/costbench/.")
    for name, field in CostbenchOptions.model_fields.items():
        if name == "gpu":
            continue
        flag, default = "--" + _OPTION_FLAGS.get(name, name).replace("_", "-"), field.get_default()
        help_text = field.description + ("" if default is None else f" (default: {default})")
        if field.annotation is bool:
            parser.add_argument(flag, dest=name, action="store_true", default=None, help=field.description)
        elif name == "sample":
            parser.add_argument(flag, dest=name, type=int, nargs="+", help=help_text)
        else:
            number = int if "int" in str(field.annotation) else float
            parser.add_argument(flag, dest=f"options_{name}", type=number, help=help_text)
    for flag, name in _GPU_FLAGS.items():
        default = GpuThroughput.__dataclass_fields__[name].default
        shown = "the roofline at the measured requests" if default is None else default
        parser.add_argument("--" + flag.replace("_", "-"), type=str if name == "gpu" else float,
                            help=f"GPU projection: {name} (default: {shown})")  # fmt: skip


def options_from(args: argparse.Namespace) -> CostbenchOptions:
    """The typed options of one costbench run (InputError naming the flag when one is wrong)."""
    data: dict[str, Any] = {}
    for name in CostbenchOptions.model_fields:
        value = getattr(args, f"options_{name}", getattr(args, name, None))
        if value is not None and name != "gpu":
            data[name] = value
    gpu = {name: getattr(args, flag) for flag, name in _GPU_FLAGS.items() if getattr(args, flag) is not None}
    if gpu:
        try:
            data["gpu"] = GpuThroughput(**{"gpu": "as given on the command line", **gpu})
        except ValueError as exc:  # its message starts with the field: name the flag behind it
            field = str(exc).split()[0]
            flag = next((f for f, name in _GPU_FLAGS.items() if name == field), "gpu")
            raise InputError(
                "--" + flag.replace("_", "-"), f"{exc} (got {gpu[field]})" if field in gpu else str(exc)
            ) from None
    try:
        return validate_model(CostbenchOptions, data, "command line")
    except InputError as exc:  # name the flag the user typed, not the field behind it
        field = (exc.field or "").split(".")[0]
        flag = "--" + _OPTION_FLAGS.get(field, field).replace("_", "-") if field else "command line"
        raise InputError(flag, exc.reason) from None


def sample_requests(requests: pa.Table, pages: int) -> pa.Table:
    keys = sorted(set(requests["url_key"].to_pylist()))[:pages]
    return requests.filter(pc.is_in(requests["url_key"], pa.array(keys, pa.string())))


def split_by_weight(keys: list[str], weights: dict[str, int], sizes: list[int]) -> list[list[str]]:
    """Deal pages to groups of the given sizes so that every group gets a similar mix of weights.

    Pages are taken from lightest to heaviest; each goes to the group furthest behind its share.
    """
    ordered = sorted(keys, key=lambda k: (weights.get(k, 0), k))
    total = sum(sizes)
    groups: list[list[str]] = [[] for _ in sizes]
    for i, key in enumerate(ordered[:total]):
        behind = [size * (i + 1) / total - len(group) for size, group in zip(sizes, groups, strict=True)]
        groups[max(range(len(sizes)), key=lambda g: (behind[g], -g))].append(key)
    return groups


def page_weights(config: JudgeConfig, pages: pa.Table) -> list[int]:
    """What judging each page costs the engine, roughly: what groups are dealt by.

    The signals judge embeds passages of the main text (its cost follows their number, correlation
    0.99 on the shared pages, against 0.73 for the full text's length); an LLM reads the judged text.
    """
    packets = [PagePacket.from_record(row, config.prompts.text_field) for row in pages.to_pylist()]
    if config.engine == "signals":
        return [len(passages(embedded_text(packet))) for packet in packets]
    return [len(packet.text) for packet in packets]


def sample_groups(
    store: RunStore, requests: pa.Table, sizes: list[int], config: JudgeConfig
) -> tuple[pa.Table, list[pa.Table]]:
    """The sampled page records, and the requests of each group (warm-up first), dealt by
    :func:`page_weights` so that every group gets a similar mix of costly and cheap pages."""
    pairs = judge_pairs(requests, page_index(store))
    requests = sample_requests(pairs.filter(pc.is_valid(pairs["page_id"])), sum(sizes))
    wanted = sorted(set(requests["url_key"].to_pylist()))
    sampled = pages_dataset(store).to_table(filter=pc.field("url_key").isin(wanted))
    if sampled.num_rows < sum(sizes):
        sizes_text = f"{len(_WARMUP_GROUPS)} x --warmup {sizes[0]} + --sample {' '.join(map(str, sizes[2:]))}"
        raise InputError(
            store.uri_of(LAYOUT.pages),
            f"{sampled.num_rows} pages to sample, {sizes_text} need more",
            field="--sample",
        )
    by_key = dict(zip(sampled["url_key"].to_pylist(), page_weights(config, sampled), strict=True))
    groups = [
        requests.filter(pc.is_in(requests["url_key"], pa.array(keys, pa.string())))
        for keys in split_by_weight(list(by_key), by_key, sizes)
    ]
    return sampled, groups


def _timed_run(uri: str, requests: pa.Table, config: JudgeConfig) -> dict[str, Any]:
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    summary = judge_run(uri, requests, config)
    wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
    table = read_judgments(uri)
    judged = table.filter(pc.not_equal(table["status"], "skipped"))
    return {
        "pages": len(pc.unique(judged["url_key"])) if judged.num_rows else 0,
        "judgments": judged.num_rows,
        "statuses": summary["statuses"],
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "table": table,
    }


#: engine -> (unit, what one measured second is)
_BILLING = {
    "signals": (
        "cpu_core_hours",
        "CPU seconds of the judging process (all its threads), the embedding "
        "model on signals.threads (1 unless set: on a busy host, threads that wait on each other "
        "bill CPU time no page needed)",
    ),
    "vllm": ("gpu_hours", "wall seconds x GPUs held by the engine"),
    "openai": ("cost", "wall seconds with requests in flight at the endpoint"),
}


def _billed_seconds(engine: str, run: dict[str, Any], options: CostbenchOptions) -> float:
    if engine == "signals":
        return run["cpu_s"]
    return run["wall_s"] * (options.gpus if engine == "vllm" else 1.0)


def tokens_per_page(table: pa.Table) -> dict[str, Any]:
    """Token means per judged page (over all its queries), overall and per stage, and the hit rate."""
    judged = table.filter(pc.not_equal(table["status"], "skipped"))
    pages = len(pc.unique(judged["url_key"])) if judged.num_rows else 0
    totals = accounting(table)
    keys = ("prompt_tokens", "cached_prompt_tokens", "prefill_tokens", "output_tokens")
    per = {s: {k: round(totals[s][k] / pages, 1) if pages else 0.0 for k in keys} for s in ("total", *STAGES)}
    return {
        "pages": pages,
        "judgments_per_page": round(judged.num_rows / pages, 3) if pages else 0.0,
        "tokens_per_page": per,
        "prefix_cache_hit_rate": round(totals["total"]["prefix_cache_hit_rate"], 4),
    }


def _money(tokens: dict[str, float], options: CostbenchOptions) -> float | None:
    """Token cost of one page (prices are per 1M tokens; cached tokens at the input price if not given)."""
    if options.price_per_1m_input is None:
        return None
    cached = (
        options.price_per_1m_cached if options.price_per_1m_cached is not None else options.price_per_1m_input
    )
    return (tokens["prefill_tokens"] * options.price_per_1m_input + tokens["cached_prompt_tokens"] * cached
            + tokens["output_tokens"] * (options.price_per_1m_output or 0.0)) / 1e6  # fmt: skip


def project(
    engine: str, state: SteadyState, usage: dict[str, Any], options: CostbenchOptions
) -> dict[str, Any]:
    """``per_1m_pages`` in the engine's units, and ``counts``: what each of its figures counts."""
    unit = _BILLING[engine][0]
    hours = state.hours_per_1m_pages(options.workers)
    tokens = usage["tokens_per_page"]["total"]
    scale = PAGES_PER_PROJECTION
    start = f"plus {options.workers} start-up(s), one per worker"
    out: dict[str, Any] = {}
    counts: dict[str, str] = {}
    if engine == "signals":
        out = {"cpu_core_hours": hours["total"], "steady_cpu_core_hours": hours["steady"],
               "start_cpu_core_hours": hours["start"]}  # fmt: skip
        counts["cpu_core_hours"] = f"CPU core-hours of the judge process at the steady rate, {start}"
        if options.core_hour_price is not None:
            out["cost"] = hours["total"] * options.core_hour_price
            counts["cost"] = "cpu_core_hours x --core-hour-price"
        return {"unit": unit, "per_1m_pages": _rounded(out), "counts": counts}
    for key in ("prompt_tokens", "cached_prompt_tokens", "prefill_tokens", "output_tokens"):
        out[key] = round(tokens[key] * scale)
    counts["prefill_tokens"] = "prompt tokens not served from the prefix cache (prompt - cached)"
    if engine == "vllm":
        out.update({"gpu_hours": hours["total"], "steady_gpu_hours": hours["steady"],
                    "start_gpu_hours": hours["start"],
                    "node_hours": hours["total"] / options.gpus_per_node})  # fmt: skip
        counts["gpu_hours"] = f"wall time x {options.gpus:g} GPU(s) at the steady rate, {start}"
        counts["node_hours"] = f"gpu_hours / {options.gpus_per_node} GPUs per node (with the node's CPUs)"
        if options.cpus_per_node is not None:
            out["node_cpu_core_hours"] = out["node_hours"] * options.cpus_per_node
            counts["node_cpu_core_hours"] = f"node_hours x {options.cpus_per_node} CPU cores per node"
        if options.gpu_hour_price is not None:
            out["cost"] = hours["total"] * options.gpu_hour_price
            counts["cost"] = "gpu_hours x --gpu-hour-price"
        requests, shape = usage["judgments_per_page"], RequestShape.of(tokens, usage["judgments_per_page"])
        gpu = options.gpu.for_requests(shape)
        for suffix, overlapped in (("", False), ("_overlapped", True)):
            out[f"projected_gpu_hours{suffix}"] = gpu_hours_per_1m_pages(tokens, requests, gpu, overlapped)
        batch, context = gpu.roofline.batch(shape), shape.context_tokens
        decode_basis = (
            "as given"
            if options.gpu.decode_tokens_per_s is not None
            else f"roofline: {batch} requests of {context:.0f} tokens of context"
        )
        counts["projected_gpu_hours"] = (
            f"measured tokens per page at {gpu.gpu}: prefill at {gpu.prefill_tokens_per_s:g} tokens/s plus "
            f"decode at {gpu.decode_tokens_per_s:.0f} tokens/s ({decode_basis}), not timed here"
        )
        counts["projected_gpu_hours_overlapped"] = (
            "the same with prefill hidden in the weight reads of decode steps "
            f"({gpu.decode_weight_share:.3f} of decode time)"
        )
        return {"unit": unit, "per_1m_pages": _rounded(out), "counts": counts}
    # openai: billed per token, throttled per minute.
    requests_per_page = usage["judgments_per_page"]
    tokens_per_request = (tokens["prompt_tokens"] + tokens["output_tokens"]) / requests_per_page
    out["requests"] = round(requests_per_page * scale)
    out["hours_at_measured_rate"] = hours["total"]
    counts["requests"] = "stage requests (a repaired answer's second request is in its tokens, not here)"
    counts["hours_at_measured_rate"] = f"wall hours at the measured steady rate, {start}"
    money = _money(tokens, options)
    if money is not None:
        out["cost"] = money * scale
        counts["cost"] = (
            "prefill x input price + cached x cached price + output x output price, per 1M tokens"
        )
    limits = {}
    if options.rate_limit_rpm:
        limits["requests_per_minute"] = out["requests"] / options.rate_limit_rpm / 60
    if options.rate_limit_tpm:
        limits["tokens_per_minute"] = out["requests"] * tokens_per_request / options.rate_limit_tpm / 60
    if limits:
        bound = max(limits, key=limits.get)
        out["hours_at_rate_limit"] = limits[bound]
        out["bound_by"] = bound
        counts["hours_at_rate_limit"] = "hours to send 1M pages' requests at the endpoint's tighter limit"
    rate = {
        "requests_per_minute": 60 * requests_per_page / state.seconds_per_page,
        "tokens_per_minute": 60 * requests_per_page * tokens_per_request / state.seconds_per_page,
    }
    return {"unit": "cost", "per_1m_pages": _rounded(out), "measured_rate": _rounded(rate), "counts": counts}


def _rounded(values: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in values.items()}


def measure(bench: RunStore, groups: list[pa.Table], pages: pa.Table, config: JudgeConfig,
            options: CostbenchOptions) -> dict[str, Any]:  # fmt: skip
    """Judge the warm-up group, then each timed group, and report steady state and projection."""
    engine = config.engine
    names = [*_WARMUP_GROUPS, *(f"pages-{size}" for size in options.sample)]
    runs = []
    for name, requests in zip(names, groups, strict=True):
        store = RunStore(bench.uri_of(name))
        keys = pa.array(sorted(set(requests["url_key"].to_pylist())), pa.string())
        store.write_table(
            LAYOUT.page_part("part-00000.parquet"), pages.filter(pc.is_in(pages["url_key"], keys))
        )
        runs.append({"group": name, **_timed_run(store.uri, requests, config)})
    if any(run["pages"] == 0 for run in runs):
        raise InputError(bench.uri_of(), "a sample group has no judgeable page (status ok)", field="--sample")
    cold, warm, *timed = [Timing(run["pages"], _billed_seconds(engine, run, options)) for run in runs]
    if any(t.pages <= warm.pages for t in timed):
        raise InputError(bench.uri_of(), "a timed group has no more judgeable pages than the warm-up")
    state = steady_state(cold, warm, timed)
    usage = tokens_per_page(pa.concat_tables([run["table"] for run in runs[len(_WARMUP_GROUPS) :]]))
    report = {
        "engine": engine,
        "model": runs[0]["table"]["model"][0].as_py() if runs[0]["table"].num_rows else None,
        "prompt_layout": config.prompts.layout if engine != "signals" else None,
        **project(engine, state, usage, options),
        "steady_state": {
            "measured": _BILLING[engine][1],
            "seconds_per_page": round(state.seconds_per_page, 6),
            "seconds_per_page_by_size": {
                str(t.pages): round(s, 6) for t, s in zip(timed, state.per_size, strict=True)
            },
            "spread": round(state.spread, 4),
            "start_s": round(state.start_s, 3),
            "per_run_s": round(state.per_run_s, 3),
        },
        **{k: v for k, v in usage.items() if k != "pages"},
        "runs": [{k: v for k, v in run.items() if k != "table"} for run in runs],
    }
    if any(run["statuses"].get("error") for run in runs):
        report["note"] = (
            "some judgments ended in error: their time is in the measurement, their tokens are not"
        )
    return report


def _layout_config(config: JudgeConfig, layout: str) -> JudgeConfig:
    return config.model_copy(update={"prompts": config.prompts.model_copy(update={"layout": layout})})


def compare(reports: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """Shared over paper: prefilled tokens per page, wall time of the timed runs, steady seconds per page."""
    paper, shared = reports["paper"], reports["shared"]

    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 4) if b else None

    def wall(report: dict[str, Any]) -> float:
        return sum(run["wall_s"] for run in report["runs"] if run["group"] not in _WARMUP_GROUPS)

    prefill = [r["tokens_per_page"]["total"]["prefill_tokens"] for r in (shared, paper)]
    steady = [r["steady_state"]["seconds_per_page"] for r in (shared, paper)]
    return {"prefill_tokens": ratio(*prefill), "wall_s": ratio(wall(shared), wall(paper)),
            "steady_seconds_per_page": ratio(*steady)}  # fmt: skip


def _decoding_as_configured(options: CostbenchOptions, config: JudgeConfig) -> CostbenchOptions:
    """The GPU projection's decode as the judge's engine would run it: the batch capped by the requests
    the engine takes at once (``batch_size`` x ``max_concurrent_batches``) and by vLLM's
    ``max_num_seqs``; one byte per KV value for an fp8 ``kv_cache_dtype`` (the roofline's bf16 has two)."""
    settings = config.vllm
    kwargs = settings.engine_kwargs
    try:
        engine_limit = int(kwargs.get("max_num_seqs", VLLM_MAX_NUM_SEQS))
    except (TypeError, ValueError):
        raise InputError(
            "judge config",
            f"not a number: {kwargs['max_num_seqs']!r}",
            field="vllm.engine_kwargs.max_num_seqs",
        ) from None
    gpu = options.gpu
    roofline = replace(
        gpu.roofline,
        max_num_seqs=max(1, min(settings.batch_size * settings.max_concurrent_batches, engine_limit)),
    )
    if str(kwargs.get("kv_cache_dtype", "auto")).startswith("fp8"):
        roofline = replace(roofline, kv_bytes_per_token=roofline.kv_bytes_per_token / 2)
    return options.model_copy(update={"gpu": replace(gpu, roofline=roofline)})


def run(args: argparse.Namespace) -> int:
    try:
        config = load_judge_config(args)
        options = options_from(args)
        if options.compare_layouts and config.engine == "signals":
            raise InputError(
                "command line", "the signals engine has no prompt layout", field="--compare-layouts"
            )
        store = RunStore(args.run)
        bench = RunStore(store.uri_of(LAYOUT.costbench_run(args.label)))
        if bench.exists():
            raise InputError(bench.uri_of(), "already measured: pass another --label", field="--label")
        requests = read_requests(args, store).read_all()
        sampled, groups = sample_groups(
            store, requests, [options.warmup] * len(_WARMUP_GROUPS) + options.sample, config
        )
        if config.engine == "signals" and config.signals.threads is None:
            config = config.model_copy(update={"signals": config.signals.model_copy(update={"threads": 1})})
        if config.engine == "vllm":
            options = _decoding_as_configured(options, config)
            ensure_ray(RayConfig(num_cpus=args.num_cpus))
        layouts = ("paper", "shared") if options.compare_layouts else (config.prompts.layout,)
        reports = {
            layout: measure(RunStore(bench.uri_of(layout if options.compare_layouts else config.engine)),
                            groups, sampled, _layout_config(config, layout), options)
            for layout in layouts
        }  # fmt: skip
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if options.compare_layouts:
        report = {"engine": config.engine, "layouts": reports, "shared_over_paper": compare(reports)}
    else:
        report = reports[layouts[0]]
    bench.write_json("report.json", report)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    run_module("costbench")
