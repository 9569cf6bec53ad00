"""``sourcebench costbench``: samples judged apart from the run, steady-state rates, per-engine units."""

from __future__ import annotations

import json

import pyarrow.csv as pacsv
import pytest
import yaml

from crawler.base import InputError
from jobs.cli import main
from jobs.costbench import CostbenchOptions, _decoding_as_configured, project, split_by_weight
from judge import JudgeConfig
from judge.cost import GpuThroughput, SteadyState
from judge.run import read_judgments
from judge.signals import engine as signals_engine
from tests.judge.conftest import requests_for


def _keys(value) -> set[str]:
    """Every key of a nested JSON value."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _options(**changes) -> CostbenchOptions:
    base = {
        "sample": [10, 20], "warmup": 2, "workers": 4, "gpus": 2.0, "gpus_per_node": 8, "cpus_per_node": 96,
        "compare_layouts": False, "core_hour_price": None, "gpu_hour_price": 3.0, "price_per_1m_input": 1.0,
        "price_per_1m_cached": 0.5, "price_per_1m_output": 4.0, "rate_limit_rpm": 600.0,
        "rate_limit_tpm": 1e6, "gpu": GpuThroughput(),
    }  # fmt: skip
    return CostbenchOptions(**{**base, **changes})


USAGE = {
    "judgments_per_page": 6.0,
    "tokens_per_page": {
        "total": {"prompt_tokens": 6000.0, "cached_prompt_tokens": 4000.0, "prefill_tokens": 2000.0,
                  "output_tokens": 600.0},
    },
}  # fmt: skip
STATE = SteadyState(seconds_per_page=0.36, per_size=(0.35, 0.37), spread=0.056, start_s=90.0, per_run_s=30.0)


def test_vllm_reports_gpu_and_node_hours_with_one_start_per_worker():
    report = project("vllm", STATE, USAGE, _options())
    per_1m = report["per_1m_pages"]
    assert report["unit"] == "gpu_hours"
    assert per_1m["steady_gpu_hours"] == 100.0  # 0.36 GPU-s x 1M / 3600
    assert per_1m["start_gpu_hours"] == 0.1  # 4 workers x 90 s
    assert per_1m["gpu_hours"] == 100.1 and per_1m["node_hours"] == round(100.1 / 8, 3)
    assert per_1m["node_cpu_core_hours"] == round(100.1 / 8 * 96, 3)
    assert per_1m["cost"] == round(100.1 * 3.0, 3)
    assert per_1m["prefill_tokens"] == 2_000_000_000
    # 2,000 prefilled tokens at 30k/s + 600 output tokens at the H200 roofline's decode rate: 256
    # requests of 1,000 prompt + 50 output tokens of context, each step reading 16.4 GB of weights and
    # 147,456 bytes per token of context at 70 % of 4.8 TB/s
    step_bytes = 16.4e9 + 256 * 1_050 * 147_456
    decode_rate = 256 / (step_bytes / (0.7 * 4.8e12))
    assert per_1m["projected_gpu_hours"] == round((2000 / 30_000 + 600 / decode_rate) * 1e6 / 3600, 3)
    # overlapped: prefill hides in the weight reads of the decode steps only
    hidden = 16.4e9 / step_bytes * 600 / decode_rate
    assert per_1m["projected_gpu_hours_overlapped"] == round(
        (2000 / 30_000 + 600 / decode_rate - hidden) * 1e6 / 3600, 3
    )
    assert "256 requests of 1050 tokens of context" in report["counts"]["projected_gpu_hours"]
    assert set(per_1m) <= set(report["counts"]) | {"prompt_tokens", "cached_prompt_tokens", "output_tokens",
                                                    "steady_gpu_hours", "start_gpu_hours"}  # fmt: skip


def test_vllm_projection_decodes_the_batch_the_engine_is_given():
    # batch_size x max_concurrent_batches requests reach one engine at once, vLLM takes at most 1024
    for vllm, batch in (
        ({}, 256),
        ({"batch_size": 8, "max_concurrent_batches": 4}, 32),
        ({"batch_size": 512}, 1024),
        ({"batch_size": 512, "engine_kwargs": {"max_num_seqs": 300}}, 300),
    ):
        config = JudgeConfig.model_validate({"engine": "vllm", "vllm": vllm})
        options = _decoding_as_configured(_options(), config)
        assert options.gpu.roofline.max_num_seqs == batch
    small = project("vllm", STATE, USAGE, _decoding_as_configured(_options(), JudgeConfig.model_validate(
        {"engine": "vllm", "vllm": {"batch_size": 1, "max_concurrent_batches": 1}})))  # fmt: skip
    fp8 = JudgeConfig.model_validate({"engine": "vllm", "vllm": {"engine_kwargs": {"kv_cache_dtype": "fp8"}}})
    assert _decoding_as_configured(_options(), fp8).gpu.roofline.kv_bytes_per_token == 147_456 / 2
    bad = JudgeConfig.model_validate({"engine": "vllm", "vllm": {"engine_kwargs": {"max_num_seqs": "many"}}})
    with pytest.raises(InputError, match="max_num_seqs"):
        _decoding_as_configured(_options(), bad)
    # one sequence at a time reads the weights for every output token: far slower decode
    assert small["per_1m_pages"]["projected_gpu_hours"] > 5 * project("vllm", STATE, USAGE, _options())[
        "per_1m_pages"]["projected_gpu_hours"]  # fmt: skip


def test_openai_reports_money_and_hours_at_the_rate_limit():
    report = project("openai", STATE, USAGE, _options())
    per_1m = report["per_1m_pages"]
    assert report["unit"] == "cost" and "gpu_hours" not in per_1m
    # per page: 2,000 prefilled x 1 + 4,000 cached x 0.5 + 600 output x 4, per 1M tokens
    assert per_1m["cost"] == (2000 + 2000 + 2400) / 1e6 * 1e6
    assert per_1m["requests"] == 6_000_000
    # 6M requests at 600/min = 166.7 h; 6.6e9 tokens at 1M/min = 110 h: requests bind
    assert per_1m["bound_by"] == "requests_per_minute" and per_1m["hours_at_rate_limit"] == 166.667
    assert report["measured_rate"]["requests_per_minute"] == 1000.0  # 6 requests per 0.36 s


def test_split_by_weight_gives_each_group_the_same_mix():
    keys = [f"k{i:02d}" for i in range(30)]
    weights = {k: i * 100 for i, k in enumerate(keys)}
    groups = split_by_weight(keys, weights, [5, 10, 15])
    assert [len(g) for g in groups] == [5, 10, 15]
    means = [sum(weights[k] for k in g) / len(g) for g in groups]
    assert max(means) - min(means) < 0.1 * max(means)


@pytest.fixture
def torch_threads():
    """costbench runs the embedding model on one thread, for the whole process: give the others back."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_signals_reports_core_hours_never_gpu_hours(tmp_path, run_uri, page_records, capsys, torch_threads):
    # An earlier test of this process may have loaded MiniLM: forget it, so the cold run is cold.
    signals_engine._embedder.cache_clear()
    signals_engine._authority.cache_clear()
    path = tmp_path / "requests.csv"
    pacsv.write_csv(requests_for(page_records), path)
    args = ["costbench", "--run", run_uri, "--requests", str(path), "--warmup", "2", "--sample", "12", "24"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["engine"] == "signals" and report["unit"] == "cpu_core_hours"
    assert set(report["per_1m_pages"]) == {"cpu_core_hours", "steady_cpu_core_hours", "start_cpu_core_hours"}
    assert not any("gpu" in key for key in _keys(report))
    assert "CPU seconds" in report["steady_state"]["measured"]
    import torch

    assert torch.get_num_threads() == 1  # signals.threads: 1 unless set, so waiting threads bill nothing
    # Two sample sizes agree on the steady rate; the warm-up carried the model load.
    by_size = report["steady_state"]["seconds_per_page_by_size"]
    assert list(by_size) == ["12", "24"]
    rates = [1 / s for s in by_size.values()]
    assert max(rates) / min(rates) <= 1.25, by_size
    assert report["steady_state"]["start_s"] > 0  # importing and loading MiniLM
    assert [run["pages"] for run in report["runs"]] == [2, 2, 12, 24]
    assert read_judgments(f"{run_uri}/costbench/sample/signals/pages-24").num_rows == 24 * 2 * 3
    assert not (tmp_path / "run" / "judgments").exists()  # the run's own judgments are untouched
    assert main(args) == 2  # the label is taken: a rerun would time nothing
    assert "--label" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "field"),
    [(["--sample", "10"], "sample"), (["--engine", "signals", "--compare-layouts"], "--compare-layouts"),
     (["--sample", "30", "60"], "--sample"),
     (["--warmup", "8", "--sample", "8", "16"], "--warmup")],
)  # fmt: skip
def test_bad_options_exit_2_naming_the_flag(tmp_path, run_uri, page_records, capsys, extra, field):
    path = tmp_path / "requests.csv"
    pacsv.write_csv(requests_for(page_records), path)
    assert main(["costbench", "--run", run_uri, "--requests", str(path), *extra]) == 2
    assert field in capsys.readouterr().err


@pytest.mark.slow
def test_compare_layouts_times_paper_and_shared_on_the_same_pages(
    tmp_path, run_uri, page_records, vllm_server, capsys
):
    base_url, model = vllm_server
    requests, config = tmp_path / "requests.csv", tmp_path / "judge.yaml"
    pacsv.write_csv(requests_for(page_records), requests)
    config.write_text(yaml.safe_dump({
        "engine": "openai",
        "openai": {"base_url": base_url, "model": model, "api_key_env": "SB_TEST_KEY", "concurrency": 4},
        "prompts": {"current_date": "2026-01-25", "token_budget": 6000, "justification_max_chars": 100},
        "sampling": {"max_tokens": 1024},
    }))  # fmt: skip
    args = ["costbench", "--run", run_uri, "--requests", str(requests), "--config", str(config),
            "--warmup", "1", "--sample", "2", "4", "--compare-layouts", "--price-per-1m-input", "0.4",
            "--rate-limit-rpm", "600"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    paper, shared = report["layouts"]["paper"], report["layouts"]["shared"]
    assert paper["prompt_layout"] == "paper" and shared["prompt_layout"] == "shared"
    assert [r["pages"] for r in paper["runs"]] == [r["pages"] for r in shared["runs"]] == [1, 1, 2, 4]
    for name in ("cold", "warm", "pages-2", "pages-4"):  # the same pages in both layouts
        keys = [set(read_judgments(f"{run_uri}/costbench/sample/{layout}/{name}")["url_key"].to_pylist())
                for layout in ("paper", "shared")]  # fmt: skip
        assert keys[0] == keys[1]
    ratios = report["shared_over_paper"]
    prefill = [r["tokens_per_page"]["total"]["prefill_tokens"] for r in (shared, paper)]
    assert ratios["prefill_tokens"] == round(prefill[0] / prefill[1], 4) < 1.0  # the page prefix is reused
    assert ratios["wall_s"] > 0 and ratios["steady_seconds_per_page"] > 0
    assert shared["unit"] == "cost" and shared["per_1m_pages"]["bound_by"] == "requests_per_minute"
    assert shared["measured_rate"]["requests_per_minute"] > 0
