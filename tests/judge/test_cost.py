"""``judge.cost``: start-up apart from the steady rate, and the GPU projection from token counts."""

from __future__ import annotations

import pytest

from judge.cost import (
    DecodeRoofline,
    GpuThroughput,
    RequestShape,
    Timing,
    gpu_hours_per_1m_pages,
    steady_state,
)


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


#: A page of 6 requests: 6,000 prompt tokens of which 2,000 prefilled, 600 output tokens.
TOKENS = {"prompt_tokens": 6_000.0, "prefill_tokens": 2_000.0, "output_tokens": 600.0}


def test_gpu_hours_from_prefill_and_decode_rates():
    gpu = GpuThroughput(
        prefill_tokens_per_s=10_000, decode_tokens_per_s=1_000, decode_efficiency=2.0, decode_weight_share=0.1
    )
    tokens = {"prompt_tokens": 72_000.0, "prefill_tokens": 36_000.0, "output_tokens": 3_600.0}
    # 36,000 prefilled tokens = 3.6 s, 3,600 output tokens at 2,000/s = 1.8 s: 5.4 s per page
    assert gpu_hours_per_1m_pages(tokens, 6, gpu) == pytest.approx(5.4 * 1e6 / 3600)
    # overlapped: prefill hides in the weight reads of the decode steps, 10 % of 1.8 s, not in all of it
    assert gpu.seconds_per_page(36_000, 3_600, overlapped=True) == pytest.approx(5.4 - 0.18)
    # a page with little prefill hides all of it
    assert gpu.seconds_per_page(1_000, 3_600, overlapped=True) == pytest.approx(1.8)
    with pytest.raises(ValueError, match="decode_tokens_per_s"):
        GpuThroughput(decode_tokens_per_s=0)
    with pytest.raises(ValueError, match="decode_weight_share"):
        GpuThroughput(decode_weight_share=1.5)
    with pytest.raises(ValueError, match="for_requests"):
        GpuThroughput().seconds_per_page(1_000, 100)


def test_request_shape_counts_cached_prefix_once():
    shape = RequestShape.of(TOKENS, 6)
    assert shape.context_tokens == pytest.approx(1_000 + 50)  # prompt + half of its 100 output tokens
    assert shape.held_tokens == pytest.approx(2_000 / 6 + 100)  # prefix-cached blocks are shared
    with pytest.raises(ValueError, match="requests"):
        RequestShape.of(TOKENS, 0)


def test_roofline_decode_reads_weights_once_and_each_context():
    roofline = DecodeRoofline(
        weight_bytes=10e9, kv_bytes_per_token=1e5, memory_bytes_per_s=1e12, bandwidth_use=0.5,
        kv_cache_bytes=20e9, max_num_seqs=256,
    )  # fmt: skip
    # 20 GB of cache / (1,000 held tokens x 100 kB) = 200 sequences, under the 256 limit
    short = RequestShape(context_tokens=4_000, held_tokens=1_000)
    assert roofline.batch(short) == 200
    # a step reads 10 GB of weights + 200 x 4,000 x 100 kB = 90 GB, at 0.5 TB/s: 0.18 s for 200 tokens
    assert roofline.tokens_per_s(short) == pytest.approx(200 / 0.18)
    assert roofline.weight_share(200, 4_000) == pytest.approx(10 / 90)
    # little held: the engine's limit decides; longer context: each step reads more, fewer tokens/s
    assert roofline.batch(RequestShape(4_000, 10)) == 256
    assert roofline.tokens_per_s(RequestShape(8_000, 1_000)) < roofline.tokens_per_s(short)
    # the throughput takes the roofline's figures only where none were given
    gpu = GpuThroughput(roofline=roofline).for_requests(short)
    assert gpu.decode_tokens_per_s == pytest.approx(200 / 0.18) and gpu.decode_weight_share == pytest.approx(
        1 / 9
    )
    given = GpuThroughput(decode_tokens_per_s=500.0, roofline=roofline).for_requests(short)
    assert given.decode_tokens_per_s == 500.0 and given.decode_weight_share == pytest.approx(1 / 9)
    with pytest.raises(ValueError, match="bandwidth_use"):
        DecodeRoofline(bandwidth_use=0)


def test_default_projection_decode_follows_the_layout():
    # shared: long contexts, small private footprint; paper: shorter contexts, the page held per request
    shared = {"prompt_tokens": 21_432.2, "prefill_tokens": 2_643.0, "output_tokens": 873.1}
    paper = {"prompt_tokens": 15_138.2, "prefill_tokens": 10_804.5, "output_tokens": 873.1}
    gpu = GpuThroughput()
    rate = {name: gpu.for_requests(RequestShape.of(t, 6)).decode_tokens_per_s for name, t in
            (("shared", shared), ("paper", paper))}  # fmt: skip
    assert rate["paper"] > rate["shared"]
    assert gpu_hours_per_1m_pages(shared, 6, gpu) < gpu_hours_per_1m_pages(paper, 6, gpu)
