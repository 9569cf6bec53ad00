"""``judge.cost``: start-up apart from the steady rate, and the GPU projection from token counts."""

from __future__ import annotations

import pytest

from judge.cost import GpuThroughput, Timing, gpu_hours_per_1m_pages, steady_state


def test_steady_rate_excludes_start_up_and_per_run_cost():
    # 0.5 s per page, 2 s every run pays (reading pages, engine actors), 8 s paid once (model load).
    cost = lambda pages, first=False: 0.5 * pages + 2.0 + (8.0 if first else 0.0)  # noqa: E731
    state = steady_state(
        Timing(4, cost(4, first=True)), Timing(4, cost(4)), [Timing(20, cost(20)), Timing(40, cost(40))]
    )
    assert state.per_size == (0.5, 0.5) and state.spread == 0.0
    assert state.per_run_s == pytest.approx(2.0) and state.start_s == pytest.approx(10.0)
    hours = state.hours_per_1m_pages(workers=36)
    assert hours["steady"] == pytest.approx(0.5 * 1e6 / 3600) and hours["start"] == pytest.approx(
        10.0 * 36 / 3600
    )
    assert hours["total"] == pytest.approx(hours["steady"] + hours["start"])


def test_spread_shows_sizes_that_disagree():
    state = steady_state(Timing(2, 10.0), Timing(2, 1.0), [Timing(10, 9.0), Timing(20, 19.0)])
    assert state.per_size == (1.0, 1.0)
    state = steady_state(Timing(2, 10.0), Timing(2, 1.0), [Timing(10, 9.0), Timing(20, 37.0)])
    assert state.per_size == (1.0, 2.0) and state.spread == pytest.approx(1 / 1.5)
    with pytest.raises(ValueError, match="two sample sizes"):
        steady_state(Timing(2, 1.0), Timing(2, 1.0), [Timing(10, 9.0)])
    with pytest.raises(ValueError, match="larger than the warm-up"):
        steady_state(Timing(2, 1.0), Timing(2, 1.0), [Timing(2, 9.0), Timing(10, 9.0)])


def test_gpu_hours_from_prefill_and_decode_rates():
    gpu = GpuThroughput(prefill_tokens_per_s=10_000, decode_tokens_per_s=1_000, decode_efficiency=2.0)
    # 36,000 prefilled tokens = 3.6 s, 3,600 output tokens at 2,000/s = 1.8 s: 5.4 s per page
    assert gpu_hours_per_1m_pages(36_000, 3_600, gpu) == pytest.approx(5.4 * 1e6 / 3600)
    # overlapped: prefill hides in the weight reads of the decode steps, 10 % of 1.8 s, not in all of it
    assert gpu.seconds_per_page(36_000, 3_600, overlapped=True) == pytest.approx(5.4 - 0.18)
    # a page with little prefill hides all of it
    assert gpu.seconds_per_page(1_000, 3_600, overlapped=True) == pytest.approx(1.8)
    with pytest.raises(ValueError, match="decode_tokens_per_s"):
        GpuThroughput(decode_tokens_per_s=0)
    with pytest.raises(ValueError, match="decode_weight_share"):
        GpuThroughput(decode_weight_share=1.5)
