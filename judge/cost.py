"""What judging costs: steady-state rates from timed samples, and per-engine units for 1M pages.

Each engine is billed by a different resource, so each gets its own unit:

- ``signals`` runs on CPUs: **CPU core-hours** (CPU seconds of the judging process, all threads).
- ``vllm`` holds GPUs: **GPU-hours** (wall time x GPUs held) and **node-hours** (GPU-hours over the
  GPUs of one node: the node's CPUs and memory come with them).
- ``openai`` is billed per token and throttled per minute: **money** from token prices and the
  **hours** 1M pages take at the measured rate and at the endpoint's rate limits.

A start-up (loading a model, starting engine actors) is paid once per worker, so it is measured
apart from the steady per-page rate (:func:`steady_state`) and added once per worker.

The GPU projection (:class:`GpuThroughput`, :func:`gpu_hours_per_1m_pages`) turns token counts per
page into GPU-seconds from a GPU's prefill and decode throughput; ``bench/gpu_prefill.py`` measures
those throughputs on a GPU, and docs/judge.md derives the defaults.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

#: Every projection is for this many pages.
PAGES_PER_PROJECTION = 1_000_000
#: vLLM's default ``max_num_seqs`` for offline engines on H100/H200-class GPUs (``vllm.engine.arg_utils``).
VLLM_MAX_NUM_SEQS = 1024


@dataclass(frozen=True)
class Timing:
    """One timed judge run: pages judged and the seconds of the billed resource it took."""

    pages: int
    seconds: float


@dataclass(frozen=True)
class SteadyState:
    """Per-page cost at steady state, the start-up apart, and how stable the estimate is."""

    seconds_per_page: float
    """Mean over the timed sample sizes."""
    per_size: tuple[float, ...]
    """Seconds per page measured at each timed sample size."""
    spread: float
    """(max - min) / mean of ``per_size``: 0.1 means the sizes agree within 10 %."""
    start_s: float
    """Start-up seconds a worker pays once: the cold run's cost beyond its pages."""
    per_run_s: float
    """Of which every run pays again (reading inputs, starting engine actors): the warm run's extra."""

    def hours_per_1m_pages(self, workers: int) -> dict[str, float]:
        """Steady hours for 1M pages, start-up hours for ``workers`` starts, and their sum."""
        steady = self.seconds_per_page * PAGES_PER_PROJECTION / 3600
        start = self.start_s * workers / 3600
        return {"total": steady + start, "steady": steady, "start": start}


def steady_state(cold: Timing, warm: Timing, timed: Sequence[Timing]) -> SteadyState:
    """Separate the start-up from the steady per-page cost.

    Four runs on different pages of a similar mix, one after the other: ``cold`` pays every
    start-up (imports, model load, engine start); ``warm``, as small, pays only what every run pays
    again (for vLLM that includes starting the engine actors; in-process models stay loaded);
    ``timed`` are at least two larger sizes. The steady cost of a page is the marginal cost over the
    warm run, ``(seconds - warm seconds) / (pages - warm pages)``, one estimate per timed size; their
    spread says whether the estimate is stable. The start-up of a worker is what the cold run took
    beyond its pages at that rate.

    Args:
        cold: The first run of the process.
        warm: A second run of the same size.
        timed: At least two runs, each larger than ``warm``.
    """
    if len(timed) < 2:
        raise ValueError("time at least two sample sizes")
    if any(t.pages <= warm.pages for t in timed):
        raise ValueError("every timed sample must be larger than the warm-up")
    per_size = [(t.seconds - warm.seconds) / (t.pages - warm.pages) for t in timed]
    mean = statistics.fmean(per_size)
    spread = (max(per_size) - min(per_size)) / mean if mean > 0 else 0.0
    per_run = max(warm.seconds - warm.pages * mean, 0.0)
    start = max(cold.seconds - cold.pages * mean, per_run)
    return SteadyState(mean, tuple(per_size), spread, start, per_run)


@dataclass(frozen=True)
class RequestShape:
    """What one stage request of a layout holds on the GPU while it decodes (from tokens per page)."""

    context_tokens: float
    """Tokens of context each decode step attends over, on average: the prompt and half the output."""
    held_tokens: float
    """KV-cache tokens the request holds alone: its prefilled and output tokens. The tokens it found in
    the prefix cache sit in blocks shared with the requests that cached them (vLLM's paged cache)."""

    @classmethod
    def of(cls, tokens: Mapping[str, float], requests: float) -> RequestShape:
        """The mean request of a page's ``tokens`` (``prompt_tokens``, ``prefill_tokens``,
        ``output_tokens`` per page) over its ``requests`` stage requests."""
        if not requests > 0:
            raise ValueError("requests per page must be positive")
        output = tokens["output_tokens"] / requests
        return cls(
            context_tokens=tokens["prompt_tokens"] / requests + output / 2,
            held_tokens=tokens["prefill_tokens"] / requests + output,
        )


@dataclass(frozen=True)
class DecodeRoofline:
    """Decode as a memory-bound step: the weights are read once per step for the whole batch, then
    each sequence's whole context from the KV cache. The batch is what the KV cache holds, up to the
    engine's sequence limit. Defaults: Qwen3-8B in bf16 on one H200 (docs/judge.md, "Cost"),
    projected, not measured."""

    weight_bytes: float = 16.4e9
    """Bytes of weights one decode step reads (Qwen3-8B: 8.19B parameters in bf16)."""
    kv_bytes_per_token: float = 147_456.0
    """Bytes of KV cache per token of context: keys and values, 36 layers x 8 heads x 128, bf16."""
    memory_bytes_per_s: float = 4.8e12
    """Peak memory bandwidth (H200: 4.8 TB/s)."""
    bandwidth_use: float = 0.7
    """Share of the peak bandwidth a decode step achieves."""
    kv_cache_bytes: float = 110e9
    """GPU memory left to the KV cache: H200's 141 GB at ``gpu_memory_utilization`` 0.9 (127 GB), less
    16.4 GB of weights and ~1 GB of activations."""
    max_num_seqs: int = 256
    """Most sequences decoded at once: the judge's requests in flight per engine (``judge.vllm``:
    ``batch_size`` x ``max_concurrent_batches``, 32 x 8 by default), at most vLLM's own limit
    (:data:`VLLM_MAX_NUM_SEQS`)."""

    def __post_init__(self) -> None:
        for name in ("weight_bytes", "kv_bytes_per_token", "memory_bytes_per_s", "kv_cache_bytes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if not 0 < self.bandwidth_use <= 1:
            raise ValueError("bandwidth_use must be in (0, 1]")
        if self.max_num_seqs < 1:
            raise ValueError("max_num_seqs must be at least 1")

    def batch(self, shape: RequestShape) -> int:
        """Sequences decoded at once: as many as the KV cache holds, at most ``max_num_seqs``."""
        fits = int(self.kv_cache_bytes // (max(shape.held_tokens, 1.0) * self.kv_bytes_per_token))
        return max(1, min(self.max_num_seqs, fits))

    def step_bytes(self, batch: int, context_tokens: float) -> float:
        """Bytes one decode step reads: the weights once, every sequence's context."""
        return self.weight_bytes + batch * context_tokens * self.kv_bytes_per_token

    def tokens_per_s(self, shape: RequestShape) -> float:
        """Output tokens per second over the whole batch."""
        batch = self.batch(shape)
        step_s = self.step_bytes(batch, shape.context_tokens) / (self.memory_bytes_per_s * self.bandwidth_use)
        return batch / step_s

    def weight_share(self, batch: int, context_tokens: float) -> float:
        """The share of a decode step that reads weights rather than KV cache: what prefill compute can
        fill in a mixed batch."""
        return self.weight_bytes / self.step_bytes(batch, context_tokens)


@dataclass(frozen=True)
class GpuThroughput:
    """Throughputs of the judge model on one GPU, from which token counts become GPU-seconds.

    The defaults are a roofline for Qwen3-8B in bf16 on one H200 (docs/judge.md, "Cost"): prefill
    ~15.1 GFLOP per token at a 4k-token prompt against 989 dense bf16 TFLOPS at 50 % utilisation;
    decode from :class:`DecodeRoofline` at the context and KV-cache footprint of the layout's requests.
    They are projected, not measured: ``bench/gpu_prefill.py`` on a GPU replaces them with
    measurements. (A dataclass, not a pydantic model, so that the bench runs where only PyTorch and
    transformers are installed.)
    """

    gpu: str = "H200 (roofline, not measured)"
    """The GPU and where the figures come from."""
    prefill_tokens_per_s: float = 30_000.0
    """Prompt tokens prefilled per second."""
    decode_tokens_per_s: float | None = None
    """Output tokens per second over the whole decode batch; None: ``roofline`` at the requests' shape."""
    prefill_efficiency: float = 1.0
    """vLLM's prefill throughput relative to the figure above."""
    decode_efficiency: float = 1.0
    """vLLM's decode throughput relative to the figure above (batching, paged KV cache)."""
    decode_weight_share: float | None = None
    """The share of decode time spent reading the weights: the only part of a decode step that prefill
    can fill. A mixed batch's matrix multiplications read the weights once for its decode and prefill
    tokens alike, so prefill compute runs in that time; the attention over each sequence's KV cache is
    a memory-bound kernel of its own, which prefill does not fill. None: ``roofline``'s share at the
    requests' batch and context (Qwen3-8B on an H200, the judge's requests, 256 at once: 11-14 %)."""
    roofline: DecodeRoofline = field(default_factory=DecodeRoofline)
    """The model and GPU behind the decode figures left None."""

    def __post_init__(self) -> None:
        for name in (
            "prefill_tokens_per_s",
            "decode_tokens_per_s",
            "prefill_efficiency",
            "decode_efficiency",
        ):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive")
        if self.decode_weight_share is not None and not 0 <= self.decode_weight_share <= 1:
            raise ValueError("decode_weight_share must be between 0 and 1")

    def for_requests(self, shape: RequestShape) -> GpuThroughput:
        """These throughputs with the decode figures left None taken from ``roofline`` at ``shape``."""
        rate, share = self.decode_tokens_per_s, self.decode_weight_share
        if rate is None:
            rate = self.roofline.tokens_per_s(shape)
        if share is None:
            share = self.roofline.weight_share(self.roofline.batch(shape), shape.context_tokens)
        return replace(self, decode_tokens_per_s=rate, decode_weight_share=share)

    def seconds_per_page(
        self, prefill_tokens: float, output_tokens: float, overlapped: bool = False
    ) -> float:
        """GPU-seconds for one page's prefilled and output tokens (decode figures set: see
        :meth:`for_requests`).

        By default prefill and decode time are added: the upper end. vLLM runs prefill chunks inside
        decode steps (chunked prefill); ``overlapped=True`` gives the lower end, with prefill hidden in
        the weight reads of the decode steps, up to ``decode_weight_share`` of the decode time. (Not
        the larger of the two: at page-length contexts most of a decode step is attention reading each
        sequence's KV cache, which prefill compute cannot overlap.)
        """
        if self.decode_tokens_per_s is None or self.decode_weight_share is None:
            raise ValueError("decode figures unset: take for_requests(shape) of these throughputs first")
        prefill = prefill_tokens / (self.prefill_tokens_per_s * self.prefill_efficiency)
        decode = output_tokens / (self.decode_tokens_per_s * self.decode_efficiency)
        hidden = min(prefill, decode * self.decode_weight_share) if overlapped else 0.0
        return prefill + decode - hidden


def gpu_hours_per_1m_pages(
    tokens: Mapping[str, float], requests: float, throughput: GpuThroughput, overlapped: bool = False
) -> float:
    """Projected GPU-hours for 1M pages from a layout's tokens per page (``prompt_tokens``,
    ``prefill_tokens``, ``output_tokens``) over its ``requests`` stage requests per page."""
    concrete = throughput.for_requests(RequestShape.of(tokens, requests))
    seconds = concrete.seconds_per_page(tokens["prefill_tokens"], tokens["output_tokens"], overlapped)
    return seconds * PAGES_PER_PROJECTION / 3600


__all__ = [
    "PAGES_PER_PROJECTION",
    "VLLM_MAX_NUM_SEQS",
    "DecodeRoofline",
    "GpuThroughput",
    "RequestShape",
    "SteadyState",
    "Timing",
    "gpu_hours_per_1m_pages",
    "steady_state",
]
