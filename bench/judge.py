"""Judge benchmark: prefill tokens of the ``paper`` vs ``shared`` prompt layouts, and judgments/s per engine.

Same run, same pages, same tiny random Qwen2 on the vLLM CPU engine through Ray Data LLM:
``prefill = prompt tokens - cached prompt tokens`` as vLLM reports them per request, summed over
every judgment. The paper layout (query first, per-stage system prompt) is the baseline; the
shared layout puts all rubrics in one block and the page before the query, so a page's stage
requests (and its other queries) reuse the page prefix. Then the signals judge and the openai
engine (against a real ``vllm serve``) run on the same pages for throughput. The token counts per
page of both layouts become projected GPU-hours per 1M pages (``judge.cost``: an H200 roofline for
Qwen3-8B unless measured figures replace it; see docs/judge.md, "Cost").

The tiny model's tokenizer is a 4,096-token BPE trained on the pages, which cuts more tokens per
character than Qwen's; ``--rank-file qwen.tiktoken`` (Qwen's published BPE ranks, the 151,643 regular
tokens Qwen 1 to 3 share) gives the tiny model Qwen's own vocabulary, so that the token counts and the
projection are the real judge's (the bench checks the conversion against ``tiktoken`` on the pages).

Usage: ``.venv/bin/python bench/judge.py [--pages 105] [--queries 2] [--rank-file qwen.tiktoken]``.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
sys.path.insert(0, str(REPO))

if TYPE_CHECKING:
    from judge.cost import GpuThroughput, RequestShape


def _queries(n: int) -> list[tuple[str, str]]:
    with open(SHARED / "sourcebench" / "sourcebench_public_queries_v1.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    step = max(len(rows) // n, 1)
    return [(rows[i]["query_id"], rows[i]["query"]) for i in range(0, step * n, step)][:n]


def _cap_text(pages, max_chars: int):
    """Pages with text cut to ``max_chars`` so that neither layout has to truncate (a fair comparison)."""
    import pyarrow.compute as pc

    for column in ("text_full", "text_main"):
        index = pages.schema.get_field_index(column)
        capped = pc.utf8_slice_codeunits(pages[column], 0, max_chars)
        pages = pages.set_column(index, pages.schema.field(column), capped)
    return pages


def _requests(pages, queries):
    import pyarrow as pa

    keys = pages["url_key"].to_pylist()
    return pa.Table.from_pylist(
        [{"url_key": k, "query_id": q, "query_text": t} for k in keys for q, t in queries]
    )


def _vllm_config(model_dir: Path, layout: str, budget: int):
    from judge import JudgeConfig

    return JudgeConfig.from_dict({
        "engine": "vllm",
        "prompts": {"layout": layout, "current_date": "2026-01-25", "token_budget": budget,
                    "justification_max_chars": 100},
        "sampling": {"max_tokens": 1024},
        "write_batch_size": 128,
        "vllm": {
            "model": str(model_dir), "max_model_len": 8192, "batch_size": 16,
            "placement_bundles": [{"CPU": 1}], "engine_kwargs": {"enforce_eager": True},
            "env_vars": {"VLLM_CPU_KVCACHE_SPACE": "2"},
        },
    })  # fmt: skip


def _measure(name: str, run_dir: Path, pages, requests, config) -> dict:
    from crawler.layout import LAYOUT
    from crawler.storage import RunStore
    from judge import judge_run
    from judge.run import accounting, read_judgments

    RunStore(str(run_dir)).write_table(LAYOUT.page_part("part-00000.parquet"), pages)
    started = time.perf_counter()
    summary = judge_run(str(run_dir), requests, config)
    wall = time.perf_counter() - started
    table = read_judgments(str(run_dir))
    totals = accounting(table)
    scored = summary["statuses"].get("scored", 0)
    result = {
        "judgments": table.num_rows,
        "valid_json_rate": round(scored / table.num_rows, 4) if table.num_rows else 0.0,
        "wall_s": round(wall, 2),
        "judgments_per_s": round(table.num_rows / wall, 3),
        "prompt_tokens": totals["total"]["prompt_tokens"],
        "cached_prompt_tokens": totals["total"]["cached_prompt_tokens"],
        "prefill_tokens": totals["total"]["prefill_tokens"],
        "output_tokens": totals["total"]["output_tokens"],
        "prefix_cache_hit_rate": round(totals["total"]["prefix_cache_hit_rate"], 4),
        "truncated_chars": summary["truncated_chars"],
        "prefill_tokens_per_stage": {s: totals[s]["prefill_tokens"] for s in ("content", "meta", "layout")},
    }
    print(f"[{name}] {json.dumps(result)}", flush=True)
    return result


def _tokens_per_page(result: dict, pages: int) -> dict:
    """Stage requests, prompt, prefilled and output tokens per page (over all its queries and stages)."""
    keys = ("judgments", "prompt_tokens", "prefill_tokens", "output_tokens")
    per_page = {key: round(result[key] / pages, 1) for key in keys}
    return {"requests": per_page.pop("judgments"), **per_page}


def _same_as_tiktoken(rank_file: Path, model_dir: Path, texts: list[str]) -> str:
    """How many texts the model's saved tokenizer cuts exactly as ``tiktoken`` does with the same ranks."""
    import unicodedata

    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tokenizers import Tokenizer

    from tests.support.tiny_model import QWEN_SPLIT

    ranks = load_tiktoken_bpe(str(rank_file))
    reference = tiktoken.Encoding("qwen", pat_str=QWEN_SPLIT, mergeable_ranks=ranks, special_tokens={})
    ours = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    same = sum(
        reference.encode(unicodedata.normalize("NFC", t), disallowed_special=()) == ours.encode(t).ids
        for t in texts
    )
    return f"identical to tiktoken on {same}/{len(texts)} pages"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=105, help="Real pages from ../shared/data (>= 100).")
    parser.add_argument("--queries", type=int, default=2, help="SourceBench public queries per page.")
    parser.add_argument("--token-budget", type=int, default=7000, help="Prompt token budget per request.")
    parser.add_argument(
        "--max-page-chars", type=int, default=8000,
        help="Page text cap, so that both layouts judge the same text untruncated (tiny model: 8k context).",
    )  # fmt: skip
    parser.add_argument(
        "--openai-pages", type=int, default=20, help="Pages for the openai-engine throughput."
    )
    parser.add_argument(
        "--rank-file", type=Path, help="Qwen's qwen.tiktoken: count tokens with Qwen's vocabulary."
    )
    args = parser.parse_args()
    if args.rank_file and not args.rank_file.is_file():
        parser.error(f"--rank-file: {args.rank_file} is not a file")

    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    import ray

    from judge import JudgeConfig
    from judge.cost import GpuThroughput, RequestShape, gpu_hours_per_1m_pages
    from tests.support.sample_pages import sample_page_records
    from tests.support.serve import STRUCTURED_OUTPUTS, openai_server
    from tests.support.tiny_model import build_tiny_qwen2

    work = Path(tempfile.mkdtemp(prefix="sbj-bench-", dir="/tmp"))
    try:
        pages = _cap_text(sample_page_records(SHARED, limit=args.pages), args.max_page_chars)
        queries = _queries(args.queries)
        requests = _requests(pages, queries)
        print(f"pages={pages.num_rows} queries={len(queries)} requests={requests.num_rows}", flush=True)
        texts = [t for t in pages["text_full"].to_pylist() if t]
        if args.rank_file:
            model_dir = build_tiny_qwen2(work / "tiny", rank_file=args.rank_file)
            checked = _same_as_tiktoken(args.rank_file, model_dir, texts)
            tokenizer = f"Qwen's vocabulary ({args.rank_file.name}), {checked}"
        else:
            model_dir = build_tiny_qwen2(work / "tiny", vocab_size=4096, corpus=texts)
            tokenizer = "BPE of 4,096 tokens trained on the pages"
        print(f"tokenizer: {tokenizer}", flush=True)

        results: dict = {}
        ray.init(num_cpus=8, include_dashboard=False, _temp_dir=str(work / "ray"), log_to_driver=False)
        try:
            for layout in ("paper", "shared"):
                config = _vllm_config(model_dir, layout, args.token_budget)
                results[f"vllm_{layout}"] = _measure(f"vllm/{layout}", work / layout, pages, requests, config)
        finally:
            ray.shutdown()

        signals = JudgeConfig.from_dict({"engine": "signals", "prompts": {"current_date": "2026-01-25"}})
        results["signals"] = _measure("signals", work / "signals", pages, requests, signals)

        extra = ["--enable-prompt-tokens-details", "--structured-outputs-config", STRUCTURED_OUTPUTS]
        with openai_server(model_dir, work / "serve.log", "tiny-qwen2", 8192, extra) as base_url:
            subset = pages.slice(0, args.openai_pages)
            openai = JudgeConfig.from_dict({
                "engine": "openai", "prompts": {"layout": "shared", "current_date": "2026-01-25",
                                                "token_budget": args.token_budget,
                                                "justification_max_chars": 100},
                "sampling": {"max_tokens": 1024},
                "openai": {"base_url": base_url, "model": "tiny-qwen2", "concurrency": 8},
            })  # fmt: skip
            results["openai_vllm_serve"] = _measure(
                "openai", work / "openai", subset, _requests(subset, queries), openai
            )

        paper, shared = results["vllm_paper"], results["vllm_shared"]
        per_page = {
            name: _tokens_per_page(results[f"vllm_{name}"], pages.num_rows) for name in ("paper", "shared")
        }
        gpu = GpuThroughput()
        final = {
            "bench": "judge",
            "pages": pages.num_rows,
            "queries": len(queries),
            "stage_requests_per_layout": paper["judgments"],
            "paper_prefill_tokens": paper["prefill_tokens"],
            "shared_prefill_tokens": shared["prefill_tokens"],
            "shared_over_paper_prefill": round(shared["prefill_tokens"] / paper["prefill_tokens"], 4),
            "paper_prefix_cache_hit_rate": paper["prefix_cache_hit_rate"],
            "shared_prefix_cache_hit_rate": shared["prefix_cache_hit_rate"],
            "valid_json_rate": min(paper["valid_json_rate"], shared["valid_json_rate"]),
            # Equal page text in both layouts (nothing truncated) is what makes the ratio fair.
            "paper_truncated_chars": paper["truncated_chars"],
            "shared_truncated_chars": shared["truncated_chars"],
            "max_page_chars": args.max_page_chars,
            "judgments_per_s": {
                "vllm_paper": paper["judgments_per_s"],
                "vllm_shared": shared["judgments_per_s"],
                "signals": results["signals"]["judgments_per_s"],
                "openai_vllm_serve": results["openai_vllm_serve"]["judgments_per_s"],
            },
            "openai_valid_json_rate": results["openai_vllm_serve"]["valid_json_rate"],
            "model": "tiny random Qwen2 (2 layers, hidden 128), vLLM CPU",
            "tokenizer": tokenizer,
            "tokens_per_page": per_page,
            # Token counts measured here; GPU throughput from judge.cost.GpuThroughput (docs/judge.md).
            "gpu_projection": gpu.gpu,
            "gpu_projection_decode": {
                name: _decode_basis(gpu, RequestShape.of(tokens, tokens["requests"]))
                for name, tokens in per_page.items()
            },  # fmt: skip
            **{
                f"projected_gpu_hours_per_1m_pages_{name}{suffix}": round(
                    gpu_hours_per_1m_pages(tokens, tokens["requests"], gpu, overlapped),
                    1,
                )
                for name, tokens in per_page.items()
                for suffix, overlapped in (("", False), ("_overlapped", True))
            },
        }
        print(json.dumps(final))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _decode_basis(gpu: GpuThroughput, shape: RequestShape) -> dict:
    """The decode figures the projection takes for one layout's requests (``judge.cost`` roofline)."""
    concrete = gpu.for_requests(shape)
    return {
        "tokens_per_s": round(concrete.decode_tokens_per_s),
        "batch": gpu.roofline.batch(shape),
        "context_tokens": round(shape.context_tokens),
        "weight_share": round(concrete.decode_weight_share, 4),
    }


if __name__ == "__main__":
    main()
