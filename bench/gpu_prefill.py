"""GPU throughput of a model of the default judge's shape (Qwen3-8B), and GPU-hours per 1M pages.

No weights are downloaded: the model is built with random weights from its published config
through ``transformers`` (``Qwen3ForCausalLM``), in bf16, so its speed is the real model's speed
(the numbers do not matter, the shapes do). Measured, each after one untimed warm-up:

- prefill tokens/s of one prompt of page length (2k to 16k tokens);
- decode tokens/s at batch sizes 1 to 256, every sequence holding 2k, 4k or 6k tokens of context
  (the judge's requests hold 2.5k-3.6k Qwen tokens) in a preallocated cache;
- a 3-stage request group: the page prefix prefilled once and reused by the three stage tails
  (what the ``shared`` layout lets vLLM's prefix cache do), against the three prompts in full.

Then the token counts per page that ``bench/judge.py`` measures (``--judge-json``: its last line;
otherwise the figures of docs/judge.md) become GPU-hours per 1M pages for both layouts, with
``judge.cost.GpuThroughput`` built from the measured prefill (at the prompt length closest to a
request's), the measured decode (at the context closest to a request's, at the fastest batch that
fitted) and the assumed vLLM efficiency relative to plain ``transformers``
(``--vllm-prefill-efficiency``, ``--vllm-decode-efficiency``). The upper end adds prefill and decode
time; the lower end (``_overlapped``) hides prefill in the weight reads of the decode steps, whose share
of a step follows from the model's shape at that batch and context (``decode_weight_share``).

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

#: Tokens per page (2 queries x 3 stages = 6 requests) used when no --judge-json is given, counted with
#: Qwen's own vocabulary. Prompt and prefilled tokens: ``bench/judge.py --rank-file qwen.tiktoken`` as
#: docs/judge.md reports it (1,134,474 paper and 277,520 shared prefilled over 105 pages, vLLM's
#: prefix cache). Output tokens: every justification at the bench's 100-character cap, the stages'
#: JSON written from the pages' own words (2,693 characters per page over 92 pages long enough),
#: 873 Qwen tokens per page (an upper end for that cap; a random model's output says nothing).
JUDGE_TOKENS_PER_PAGE = {
    "paper": {"requests": 6.0, "prompt_tokens": 15138.2, "prefill_tokens": 10804.5, "output_tokens": 873.1},
    "shared": {"requests": 6.0, "prompt_tokens": 21432.2, "prefill_tokens": 2643.0, "output_tokens": 873.1},
}


@dataclass(frozen=True)
class Plan:
    """What to measure."""

    prompt_lengths: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    decode_contexts: tuple[int, ...]
    """Tokens each decoding sequence holds (the judge's requests hold 2.5k-3.6k Qwen tokens)."""
    decode_steps: int
    group_prefix: int
    """Tokens of the page prefix of a request group (URL, page text)."""
    group_tail: int
    """Tokens of each stage's own tail (query, stage packet, instruction)."""
    repeats: int


FULL = Plan((2048, 4096, 8192, 16384), (1, 8, 32, 64, 128, 256), (2048, 4096, 6144), 16, 4096, 256, 3)
TINY_PLAN = Plan((32, 64, 128), (1, 2, 4), (32, 64), 4, 64, 8, 2)


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


def _filled_static_cache(torch, model, batch: int, context: int, steps: int):
    """A preallocated KV cache of ``batch`` sequences holding ``context`` tokens each, room for ``steps``.

    Filled with random keys and values rather than prefilled: decode speed depends on the cache's
    shape, not on what it holds, and filling skips prefilling ``batch x context`` tokens first. A
    static cache is written in place, as vLLM's paged cache is; transformers' ``DynamicCache``
    concatenates the whole cache at every step, which at batch 256 costs more than the step itself.
    """
    from transformers import StaticCache

    config = model.config
    cache = StaticCache(config=config, max_cache_len=context + steps)
    device = next(model.parameters()).device
    cache.early_initialization(
        batch, config.num_key_value_heads, config.head_dim, next(model.parameters()).dtype, device
    )
    for layer in cache.layers:
        layer.keys.normal_()
        layer.values.normal_()
        layer.cumulative_length.fill_(context)
    return cache


def decode_rates(model, plan: Plan, timer: Timer, device: str) -> dict[str, dict[str, float | None]]:
    """Output tokens/s over a batch, by context and batch size (None: the cache did not fit)."""
    torch = timer.torch
    rates: dict[str, dict[str, float | None]] = {}
    for context in plan.decode_contexts:
        by_batch: dict[str, float | None] = {}
        for batch in plan.batch_sizes:
            cache = None
            try:
                cache = _filled_static_cache(torch, model, batch, context, plan.decode_steps)
                step = _ids(torch, model, batch, 1, device)

                def decode(cache=cache, step=step, context=context):
                    for layer in cache.layers:
                        layer.cumulative_length.fill_(context)
                    for _ in range(plan.decode_steps):
                        model(step, past_key_values=cache, use_cache=True)

                seconds = timer.median(decode)
                by_batch[str(batch)] = round(batch * plan.decode_steps / seconds, 1)
            except torch.OutOfMemoryError:
                by_batch[str(batch)] = None
            finally:
                cache = None
                if device == "cuda":
                    torch.cuda.empty_cache()
        rates[str(context)] = by_batch
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


def kv_bytes_per_token(shape: dict) -> int:
    """Bytes of bf16 KV cache one token of context takes (keys and values of every layer)."""
    return 2 * 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"]


def projection(
    measured: dict,
    tokens_per_page: dict,
    gpu_name: str,
    prefill_efficiency: float,
    decode_efficiency: float,
    weight_bytes: float,
    kv_per_token: float,
) -> dict:
    """GPU-hours per 1M pages per layout from measured throughputs and token counts per page."""
    from judge.cost import DecodeRoofline, GpuThroughput, gpu_hours_per_1m_pages

    steps = DecodeRoofline(weight_bytes=weight_bytes, kv_bytes_per_token=kv_per_token)
    out = {}
    for layout, tokens in tokens_per_page.items():
        request = tokens["prompt_tokens"] / tokens["requests"]
        length = _closest(measured["prefill_tokens_per_s"], request)
        context = _closest(measured["decode_tokens_per_s"], request)
        # vLLM batches as many sequences as its KV cache holds: the best batch that fitted.
        fitted = {b: r for b, r in measured["decode_tokens_per_s"][context].items() if r is not None}
        batch = max(fitted, key=fitted.get)
        throughput = GpuThroughput(
            gpu=gpu_name,
            prefill_tokens_per_s=measured["prefill_tokens_per_s"][length],
            decode_tokens_per_s=fitted[batch],
            prefill_efficiency=prefill_efficiency,
            decode_efficiency=decode_efficiency,
            decode_weight_share=steps.weight_share(int(batch), int(context)),
        )
        for suffix, overlapped in (("", False), ("_overlapped", True)):
            hours = gpu_hours_per_1m_pages(tokens, tokens["requests"], throughput, overlapped)
            out[f"projected_gpu_hours_per_1m_pages_{layout}{suffix}"] = round(hours, 2)
        out[f"{layout}_basis"] = {
            "prefill_at_prompt_tokens": int(length),
            "decode_at_context": int(context),
            "decode_at_batch": int(batch),
            "decode_weight_share": round(throughput.decode_weight_share, 4),
            **tokens,
        }
    return out


def _closest(by_tokens: dict[str, object], tokens: float) -> str:
    """The key (a token count) of ``by_tokens`` nearest to ``tokens``."""
    return min(by_tokens, key=lambda n: abs(int(n) - tokens))


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
    parser.add_argument(
        "--decode-contexts", type=int, nargs="+", help="Tokens each decoding sequence holds (several)."
    )
    parser.add_argument(
        "--judge-json", help="Output of bench/judge.py (its last line gives tokens per page)."
    )
    parser.add_argument(
        "--vllm-prefill-efficiency", type=float, default=1.0,
        help="vLLM prefill throughput / transformers' (assumed: both compute-bound).",
    )  # fmt: skip
    parser.add_argument(
        "--vllm-decode-efficiency", type=float, default=1.0,
        help="vLLM decode throughput / transformers' (assumed: both write a preallocated cache in place).",
    )  # fmt: skip
    args = parser.parse_args(argv)

    import torch
    import transformers

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.tiny:
        torch.set_num_threads(1)  # a model this small gains nothing from threads that wait on each other
    plan = TINY_PLAN if args.tiny else FULL
    if args.decode_contexts:
        plan = Plan(**{**asdict(plan), "decode_contexts": tuple(args.decode_contexts)})
    shape = TINY if args.tiny else QWEN3_8B
    gpu_name = (
        torch.cuda.get_device_name() if device == "cuda" else f"CPU ({'tiny' if args.tiny else 'full'})"
    )
    model = build_model(shape, device, torch.bfloat16)
    parameters = sum(p.numel() for p in model.parameters())
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
        "parameters": parameters,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "plan": asdict(plan),
        **measured,
        "assumptions": {
            "vllm_prefill_efficiency": args.vllm_prefill_efficiency,
            "vllm_decode_efficiency": args.vllm_decode_efficiency,
            "tokens_per_page_from": args.judge_json or "docs/judge.md (bench/judge.py)",
            "prefill_and_decode": "added (upper end); _overlapped: prefill hidden in the weight reads of "
            "the decode steps, decode_weight_share of decode time (lower end)",
        },
        **projection(
            measured,
            _tokens_per_page(args.judge_json),
            gpu_name,
            args.vllm_prefill_efficiency,
            args.vllm_decode_efficiency,
            weight_bytes=2 * parameters,
            kv_per_token=kv_bytes_per_token(shape),
        ),  # fmt: skip
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
