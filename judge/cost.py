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
from collections.abc import Sequence
from dataclasses import dataclass

#: Every projection is for this many pages.
PAGES_PER_PROJECTION = 1_000_000


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
class GpuThroughput:
    """Throughputs of the judge model on one GPU, from which token counts become GPU-seconds.

    The defaults are a roofline for Qwen3-8B in bf16 on one H200 (docs/judge.md, "Cost"): prefill
    ~15.1 GFLOP per token at a 4k-token prompt against 989 dense bf16 TFLOPS at 50 % utilisation;
    decode at 4.5k tokens of context reads ~147 KB of KV cache per token of context per sequence
    plus 16.4 GB of weights per step, at 70 % of 4.8 TB/s. They are projected, not measured:
    ``bench/gpu_prefill.py`` on a GPU replaces them with measurements. (A dataclass, not a pydantic
    model, so that the bench runs where only PyTorch and transformers are installed.)
    """

    gpu: str = "H200 (roofline, not measured)"
    """The GPU and where the figures come from."""
    prefill_tokens_per_s: float = 30_000.0
    """Prompt tokens prefilled per second."""
    decode_tokens_per_s: float = 4_500.0
    """Output tokens per second over the whole decode batch."""
    prefill_efficiency: float = 1.0
    """vLLM's prefill throughput relative to the figure above."""
    decode_efficiency: float = 1.0
    """vLLM's decode throughput relative to the figure above (batching, paged KV cache)."""
    decode_weight_share: float = 0.10
    """The share of decode time spent reading the weights: the only part of a decode step that prefill
    can fill. A mixed batch's matrix multiplications read the weights once for its decode and prefill
    tokens alike, so prefill compute runs in that time; the attention over each sequence's KV cache is
    a memory-bound kernel of its own, which prefill does not fill. Qwen3-8B in bf16 at 4.5k tokens of
    context and 160-256 sequences: 16.4 GB of weights against 0.66 GB of KV cache per sequence, 9-13 %."""

    def __post_init__(self) -> None:
        for name in (
            "prefill_tokens_per_s",
            "decode_tokens_per_s",
            "prefill_efficiency",
            "decode_efficiency",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if not 0 <= self.decode_weight_share <= 1:
            raise ValueError("decode_weight_share must be between 0 and 1")

    def seconds_per_page(
        self, prefill_tokens: float, output_tokens: float, overlapped: bool = False
    ) -> float:
        """GPU-seconds for one page's prefilled and output tokens.

        By default prefill and decode time are added: the upper end. vLLM runs prefill chunks inside
        decode steps (chunked prefill); ``overlapped=True`` gives the lower end, with prefill hidden in
        the weight reads of the decode steps, up to ``decode_weight_share`` of the decode time. (Not
        the larger of the two: at page-length contexts most of a decode step is attention reading each
        sequence's KV cache, which prefill compute cannot overlap.)
        """
        prefill = prefill_tokens / (self.prefill_tokens_per_s * self.prefill_efficiency)
        decode = output_tokens / (self.decode_tokens_per_s * self.decode_efficiency)
        hidden = min(prefill, decode * self.decode_weight_share) if overlapped else 0.0
        return prefill + decode - hidden


def gpu_hours_per_1m_pages(
    prefill_tokens: float, output_tokens: float, throughput: GpuThroughput, overlapped: bool = False
) -> float:
    """Projected GPU-hours for 1M pages from prefilled and output tokens per page."""
    seconds = throughput.seconds_per_page(prefill_tokens, output_tokens, overlapped)
    return seconds * PAGES_PER_PROJECTION / 3600


__all__ = [
    "PAGES_PER_PROJECTION",
    "GpuThroughput",
    "SteadyState",
    "Timing",
    "gpu_hours_per_1m_pages",
    "steady_state",
]
