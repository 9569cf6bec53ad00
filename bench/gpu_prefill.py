"""GPU throughput of a model of the default judge's shape (Qwen3-8B), and GPU-hours per 1M pages.

No weights are downloaded: the model is built with random weights from its published config
through ``transformers`` (``Qwen3ForCausalLM``), in bf16, so its speed is the real model's speed
(the numbers do not matter, the shapes do). Measured, each after one untimed warm-up:

- prefill tokens/s of one prompt of page length (2k to 16k tokens);
- decode tokens/s at batch sizes 1 to 256 (every sequence holding ``--decode-context`` tokens);
- a 3-stage request group: the page prefix prefilled once and reused by the three stage tails
  (what the ``shared`` layout lets vLLM's prefix cache do), against the three prompts in full.

Then the token counts per page that ``bench/judge.py`` measures (``--judge-json``: its last line;
otherwise the figures of docs/judge.md) become GPU-hours per 1M pages for both layouts, with
``judge.cost.GpuThroughput`` built from the measured prefill (at the prompt length closest to a
page's) and decode (at the largest batch that ran) and the assumed vLLM efficiency relative to plain
``transformers`` (``--vllm-prefill-efficiency``, ``--vllm-decode-efficiency``).

Usage: ``python bench/gpu_prefill.py`` on a GPU machine (PyTorch + transformers, no vLLM or network
needed); ``--tiny`` runs a 2-layer model of the same family on CPU in seconds (the test). Last line:
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: Qwen3-8B, from its published config.json (huggingface.co/Qwen/Qwen3-8B/blob/main/config.json):
#: 36 layers, hidden 4096, 32 query heads and 8 KV heads of 128, MLP 12288, vocabulary 151,936
#: (8.19B parameters, 16.4 GB in bf16; 144 KiB of KV cache per token).
QWEN3_8B = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
    "attention_bias": False,
}
#: The same family, small enough for a CPU test.
TINY = {
    **QWEN3_8B,
    "vocab_size": 1024,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
}

#: Tokens per page (2 queries x 3 stages = 6 requests) used when no --judge-json is given. Prefilled
#: tokens: bench/judge.py as docs/judge.md reports it (1,603,542 paper and 395,732 shared over 105
#: pages); prompt tokens: those over 1 - the measured prefix-cache hit rate (0.295, 0.881); output
#: tokens: every justification at the bench's 100-character cap, 1,191 characters of JSON per
#: (page, query) at 3.5 characters per token (an upper end, not measured).
JUDGE_TOKENS_PER_PAGE = {
    "paper": {"requests": 6.0, "prompt_tokens": 21662.0, "prefill_tokens": 15271.8, "output_tokens": 681.0},
    "shared": {"requests": 6.0, "prompt_tokens": 31672.0, "prefill_tokens": 3768.9, "output_tokens": 681.0},
}


@dataclass(frozen=True)
class Plan:
    """What to measure."""

    prompt_lengths: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    decode_context: int
    decode_steps: int
    group_prefix: int
    """Tokens of the page prefix of a request group (URL, page text)."""
    group_tail: int
    """Tokens of each stage's own tail (query, stage packet, instruction)."""
    repeats: int


FULL = Plan((2048, 4096, 8192, 16384), (1, 8, 32, 64, 128, 256), 2048, 16, 4096, 256, 3)
TINY_PLAN = Plan((32, 64, 128), (1, 2, 4), 32, 4, 64, 8, 2)


class Timer:
    """Median wall seconds of a function after one untimed call (device work included)."""

    def __init__(self, torch, device: str, repeats: int):
        self.torch, self.device, self.repeats = torch, device, repeats

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def median(self, fn: Callable[[], object]) -> float:
        fn()
        times = []
        for _ in range(self.repeats):
            self.sync()
            started = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - started)
        return statistics.median(times)


def build_model(shape: dict, device: str, dtype):
    """A Qwen3 causal LM of ``shape`` with random weights, built directly on the device."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3ForCausalLM(Qwen3Config(**shape, torch_dtype=dtype))
    finally:
        torch.set_default_dtype(default)
    return model.eval()


def _ids(torch, model, batch: int, length: int, device: str):
    return torch.randint(0, model.config.vocab_size, (batch, length), device=device)


def prefill_rates(model, plan: Plan, timer: Timer, device: str) -> dict[str, float]:
    """Prompt tokens per second of one prompt of each length (KV cache built, one logit row)."""
    torch = timer.torch
    rates = {}
    for length in plan.prompt_lengths:
        ids = _ids(torch, model, 1, length, device)
        seconds = timer.median(lambda ids=ids: model(ids, use_cache=True, logits_to_keep=1))
        rates[str(length)] = round(length / seconds, 1)
    return rates


def _batched_cache(model, ids, chunk: int):
    """The KV cache of ``ids`` (batch x context), prefilled ``chunk`` sequences at a time."""
    from transformers import DynamicCache

    parts = [model(ids[i : i + chunk], use_cache=True, logits_to_keep=1).past_key_values
             for i in range(0, ids.shape[0], chunk)]  # fmt: skip
    import torch

    cache = DynamicCache()
    for layer in range(len(parts[0].layers)):
        keys = torch.cat([part.layers[layer].keys for part in parts])
        values = torch.cat([part.layers[layer].values for part in parts])
        for part in parts:
            part.layers[layer].keys = part.layers[layer].values = None
        cache.update(keys, values, layer)
    return cache


def decode_rates(model, plan: Plan, timer: Timer, device: str) -> dict[str, float | None]:
    """Output tokens/s over a batch, each sequence at ``decode_context`` tokens (None: out of memory)."""
    torch = timer.torch
    rates: dict[str, float | None] = {}
    for batch in plan.batch_sizes:
        try:
            cache = _batched_cache(model, _ids(torch, model, batch, plan.decode_context, device), chunk=16)
            step = _ids(torch, model, batch, 1, device)

            def decode(cache=cache, step=step):
                for _ in range(plan.decode_steps):
                    model(step, past_key_values=cache, use_cache=True)
                cache.crop(-plan.decode_steps)

            seconds = timer.median(decode)
            rates[str(batch)] = round(batch * plan.decode_steps / seconds, 1)
        except torch.OutOfMemoryError:
            rates[str(batch)] = None
        finally:
            cache = None
            if device == "cuda":
                torch.cuda.empty_cache()
    return rates


def request_group(model, plan: Plan, timer: Timer, device: str) -> dict[str, float]:
    """Seconds to prefill a 3-stage group: page prefix once and reused, against three full prompts."""
    torch = timer.torch
    prefix = _ids(torch, model, 1, plan.group_prefix, device)
    tails = [_ids(torch, model, 1, plan.group_tail, device) for _ in range(3)]

    def reused():
        cache = model(prefix, use_cache=True, logits_to_keep=1).past_key_values
        for tail in tails:
            model(tail, past_key_values=cache, use_cache=True, logits_to_keep=1)
            cache.crop(-plan.group_tail)

    def three_times():
        for tail in tails:
            model(torch.cat([prefix, tail], dim=1), use_cache=True, logits_to_keep=1)

    once, full = timer.median(reused), timer.median(three_times)
    return {"prefix_reused_s": round(once, 4), "three_full_prompts_s": round(full, 4),
            "reused_over_full": round(once / full, 4)}  # fmt: skip


def projection(
    measured: dict, tokens_per_page: dict, gpu_name: str, prefill_efficiency: float, decode_efficiency: float
) -> dict:
    """GPU-hours per 1M pages per layout from measured throughputs and token counts per page."""
    from judge.cost import GpuThroughput, gpu_hours_per_1m_pages

    decode = [(int(b), r) for b, r in measured["decode_tokens_per_s"].items() if r is not None]
    batch, decode_rate = max(decode)
    out = {}
    for layout, tokens in tokens_per_page.items():
        # A page's requests are about prompt_tokens / 6 long (2 queries x 3 stages).
        length = min(
            measured["prefill_tokens_per_s"], key=lambda n: abs(int(n) - tokens["prompt_tokens"] / 6)
        )
        throughput = GpuThroughput(
            gpu=gpu_name,
            prefill_tokens_per_s=measured["prefill_tokens_per_s"][length],
            decode_tokens_per_s=decode_rate,
            prefill_efficiency=prefill_efficiency,
            decode_efficiency=decode_efficiency,
        )
        for suffix, overlapped in (("", False), ("_overlapped", True)):
            hours = gpu_hours_per_1m_pages(
                tokens["prefill_tokens"], tokens["output_tokens"], throughput, overlapped
            )
            out[f"projected_gpu_hours_per_1m_pages_{layout}{suffix}"] = round(hours, 2)
        out[f"{layout}_basis"] = {"prefill_at_prompt_tokens": int(length), "decode_at_batch": batch, **tokens}
    return out


def _tokens_per_page(path: str | None) -> dict:
    if path is None:
        return JUDGE_TOKENS_PER_PAGE
    lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
    return json.loads(lines[-1])["tokens_per_page"]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tiny", action="store_true", help="A 2-layer model of the family on CPU (the test)."
    )
    parser.add_argument("--device", help="cuda or cpu (default: cuda when available).")
    parser.add_argument("--decode-context", type=int, help="Tokens each decoding sequence holds.")
    parser.add_argument(
        "--judge-json", help="Output of bench/judge.py (its last line gives tokens per page)."
    )
    parser.add_argument(
        "--vllm-prefill-efficiency", type=float, default=1.0,
        help="vLLM prefill throughput / transformers' (assumed: both compute-bound).",
    )  # fmt: skip
    parser.add_argument(
        "--vllm-decode-efficiency", type=float, default=1.5,
        help="vLLM decode throughput / transformers' (assumed: paged KV cache, CUDA graphs).",
    )  # fmt: skip
    args = parser.parse_args(argv)

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.tiny:
        torch.set_num_threads(1)  # a model this small gains nothing from threads that wait on each other
    plan = TINY_PLAN if args.tiny else FULL
    if args.decode_context:
        plan = Plan(**{**asdict(plan), "decode_context": args.decode_context})
    shape = TINY if args.tiny else QWEN3_8B
    gpu_name = (
        torch.cuda.get_device_name() if device == "cuda" else f"CPU ({'tiny' if args.tiny else 'full'})"
    )
    model = build_model(shape, device, torch.bfloat16)
    timer = Timer(torch, device, plan.repeats)
    with torch.inference_mode():
        measured = {
            "prefill_tokens_per_s": prefill_rates(model, plan, timer, device),
            "decode_tokens_per_s": decode_rates(model, plan, timer, device),
            "request_group": request_group(model, plan, timer, device),
        }
        print(json.dumps(measured), flush=True)
    result = {
        "bench": "gpu_prefill",
        "device": gpu_name,
        "model": "Qwen3-8B shape, random weights, bf16"
        if not args.tiny
        else "tiny Qwen3, random weights, bf16",
        "parameters": sum(p.numel() for p in model.parameters()),
        "plan": asdict(plan),
        **measured,
        "assumptions": {
            "vllm_prefill_efficiency": args.vllm_prefill_efficiency,
            "vllm_decode_efficiency": args.vllm_decode_efficiency,
            "tokens_per_page_from": args.judge_json or "docs/judge.md (bench/judge.py)",
            "prefill_and_decode": "added (upper end); _overlapped: the larger of the two (lower end)",
        },
        **projection(
            measured,
            _tokens_per_page(args.judge_json),
            gpu_name,
            args.vllm_prefill_efficiency,
            args.vllm_decode_efficiency,
        ),  # fmt: skip
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
