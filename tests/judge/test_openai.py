"""The openai engine against a fault-injecting loopback server and against a real ``vllm serve``."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from judge import JudgeConfig, judge_run
from judge.output import parse_stage_output
from judge.run import read_judgments
from tests.judge.conftest import OFFICIAL_DATE, requests_for, write_run
from tests.judge.fault_server import FaultServer, fate_of

SECRET = "sk-test-never-log-this-0123456789"


@pytest.fixture
def fault_server():
    server = FaultServer(stall_s=1.5).start()
    try:
        yield server
    finally:
        server.stop()


def _openai_config(base_url: str, model: str, **prompts) -> JudgeConfig:
    return JudgeConfig.from_dict({
        "engine": "openai",
        "openai": {"base_url": base_url, "model": model, "api_key_env": "SB_TEST_KEY", "concurrency": 4,
                   "timeout_s": 20.0, "max_retries": 4, "backoff_base_s": 0.05, "backoff_max_s": 1.0},
        "prompts": {"current_date": OFFICIAL_DATE.isoformat(), "token_budget": 6000,
                    "justification_max_chars": 100, **prompts},
        "sampling": {"max_tokens": 1024},
    })  # fmt: skip


def test_faults_end_scored_or_unscorable_and_the_key_is_never_written(
    tmp_path: Path, page_records: pa.Table, fault_server: FaultServer, monkeypatch, caplog
):
    monkeypatch.setenv("SB_TEST_KEY", SECRET)
    config = _openai_config(fault_server.url, "fault-model")
    config = config.model_copy(update={"openai": config.openai.model_copy(update={"timeout_s": 0.5})})
    run = write_run(tmp_path, page_records.slice(0, 12))
    requests = requests_for(page_records.slice(0, 12), limit=12)
    with caplog.at_level(logging.DEBUG):
        summary = judge_run(run, requests, config)
    table = read_judgments(run)
    assert table.num_rows == requests.num_rows * 3
    assert set(table["status"].to_pylist()) <= {"scored", "unscorable"}
    # Every fate was exercised, and the retries and repairs actually happened.
    assert {"rate_limit", "server_error", "timeout", "garbage", "bad_then_good", "always_bad"} <= set(
        fault_server.attempts
    )
    for row in table.to_pylist():
        fate = fate_of(_first_user_message(row, config))
        if fate == "always_bad":
            assert row["status"] == "unscorable" and row["raw_output"] and not row["scores"]
            assert "not valid JSON" in row["error"]
        else:
            assert row["status"] == "scored", (fate, row["error"])
            parse_stage_output(row["stage"], row["raw_output"])
    repaired = table.filter(pc.greater(table["prompt_tokens"], 100))  # two attempts' usage summed
    assert repaired.num_rows > 0
    assert summary["cached_prompt_tokens"] == 64 * (table.num_rows + repaired.num_rows)
    # The API key went out in the Authorization header and nowhere else.
    assert all(h == f"Bearer {SECRET}" for h in fault_server.auth_headers)
    for path in Path(run).rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in caplog.text


def _first_user_message(row: dict, config: JudgeConfig) -> str:
    """Rebuild the user message the server saw for a judgment row (for its fate)."""
    from judge.prompts import estimate_counter, render

    request = _REQUESTS[row["judgment_key"]]
    return render(request, config.prompts, estimate_counter(config.prompts.chars_per_token)).messages[1][
        "content"
    ]


_REQUESTS: dict = {}


@pytest.fixture(autouse=True)
def _capture_requests(monkeypatch):
    """Remember the StageRequests a unit builds, keyed by judgment_key (to re-render prompts in asserts)."""
    from judge.units import UnitJudge

    real = UnitJudge._requests

    def build(self, unit):
        todo, skipped = real(self, unit)
        _REQUESTS.update({r.judgment_key: r for r in todo})
        return todo, skipped

    monkeypatch.setattr(UnitJudge, "_requests", build)


@pytest.mark.slow
def test_real_vllm_serve_scores_validate_and_prompt_cache_is_reported(tmp_path, page_records, vllm_server):
    base_url, model = vllm_server
    run = write_run(tmp_path, page_records.slice(0, 8))
    requests = requests_for(page_records.slice(0, 8), limit=8)
    summary = judge_run(run, requests, _openai_config(base_url, model))
    table = read_judgments(run)
    assert table.num_rows == 8 * 2 * 3
    assert set(table["status"].to_pylist()) <= {"scored", "unscorable"}
    scored = table.filter(pc.equal(table["status"], "scored"))
    assert scored.num_rows == table.num_rows  # structured output: valid JSON every time
    for row in scored.to_pylist():
        parse_stage_output(row["stage"], row["raw_output"])
    assert summary["prompt_tokens"] > 0 and summary["output_tokens"] > 0
    assert summary["cached_prompt_tokens"] > 0  # the shared rubric block and page prefix hit vLLM's cache


@pytest.mark.slow
def test_prompt_change_recomputes_only_the_affected_stage(tmp_path, page_records, vllm_server):
    import yaml

    base_url, model = vllm_server
    run = write_run(tmp_path, page_records.slice(0, 4))
    requests = requests_for(page_records.slice(0, 4), limit=4)
    config = _openai_config(base_url, model, layout="paper")
    first = judge_run(run, requests, config)
    assert first["judged"] == 4 * 2 * 3
    calibration = yaml.safe_load(config.prompts.calibration_file.read_text())
    calibration["layout"][0]["answer"]["layout_ad_density"]["justification"] = "Reworded calibration example."
    changed = tmp_path / "calibration.yaml"
    changed.write_text(yaml.safe_dump(calibration))
    second = judge_run(
        run, requests, _openai_config(base_url, model, layout="paper", calibration_file=str(changed))
    )
    assert second["judged"] == 4 * 2 and second["already_done"] == 4 * 2 * 2
    table = read_judgments(run)
    per_stage = {s: table.filter(pc.equal(table["stage"], s)).num_rows for s in ("content", "meta", "layout")}
    assert per_stage == {"content": 8, "meta": 8, "layout": 16}
