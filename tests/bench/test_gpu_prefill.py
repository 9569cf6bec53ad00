"""``bench/gpu_prefill.py --tiny``: the GPU throughput bench runs end to end on CPU with a tiny Qwen3."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu_prefill.py"


def _bench():
    spec = importlib.util.spec_from_file_location("gpu_prefill", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_tiny_run_measures_and_projects_both_layouts(tmp_path, capsys):
    bench = _bench()
    judge_out = tmp_path / "judge.out"
    tokens = {
        "paper": {"requests": 6, "prompt_tokens": 600, "prefill_tokens": 500, "output_tokens": 60},
        "shared": {"requests": 6, "prompt_tokens": 700, "prefill_tokens": 150, "output_tokens": 60},
    }
    judge_out.write_text("pages=1\n" + json.dumps({"tokens_per_page": tokens}) + "\n")
    result = bench.main(["--tiny", "--device", "cpu", "--judge-json", str(judge_out)])
    last = capsys.readouterr().out.splitlines()[-1]
    assert json.loads(last) == json.loads(json.dumps(result))  # last line: one JSON object
    assert result["model"].startswith("tiny Qwen3") and result["device"] == "CPU (tiny)"
    plan = bench.TINY_PLAN
    assert set(result["prefill_tokens_per_s"]) == {str(n) for n in plan.prompt_lengths}
    decode = result["decode_tokens_per_s"]
    assert set(decode) == {str(n) for n in plan.decode_contexts}
    assert all(set(by_batch) == {str(b) for b in plan.batch_sizes} for by_batch in decode.values())
    rates = [*result["prefill_tokens_per_s"].values(), *(r for d in decode.values() for r in d.values())]
    assert all(rate > 0 for rate in rates)
    group = result["request_group"]
    assert group["prefix_reused_s"] > 0 and group["three_full_prompts_s"] > 0
    for layout in ("paper", "shared"):
        basis = result[f"{layout}_basis"]
        by_batch = decode[str(basis["decode_at_context"])]
        assert by_batch[str(basis["decode_at_batch"])] == max(by_batch.values())  # the fastest batch
        # Closest to 600-700 / 6 tokens per request.
        assert basis["prefill_at_prompt_tokens"] == 128 and basis["decode_at_context"] == 64
        assert result[f"projected_gpu_hours_per_1m_pages_{layout}"] > 0
    # Fewer prefilled tokens per page, same output: the shared layout projects fewer GPU-hours.
    assert (
        result["projected_gpu_hours_per_1m_pages_shared"] < result["projected_gpu_hours_per_1m_pages_paper"]
    )


def test_full_shape_is_qwen3_8b():
    bench = _bench()
    shape = bench.QWEN3_8B
    per_layer = (
        shape["hidden_size"]
        * shape["head_dim"]
        * (2 * shape["num_attention_heads"] + 2 * shape["num_key_value_heads"])
        + 3 * shape["hidden_size"] * shape["intermediate_size"]
    )
    params = shape["num_hidden_layers"] * per_layer + 2 * shape["vocab_size"] * shape["hidden_size"]
    assert 8.1e9 < params < 8.3e9  # Qwen3-8B: 8.2B parameters
