"""``sourcebench costbench``: a sample judged apart from the run, tokens per page, 1M-page projection."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.csv as pacsv

from jobs.cli import main
from jobs.costbench import project
from judge.run import read_judgments
from judge.schema import JUDGMENT_SCHEMA
from tests.judge.conftest import requests_for


def _judgments(pages: int, prompt: int, cached: int, output: int) -> pa.Table:
    rows = [
        {"judgment_key": f"{p}{s}", "url_key": f"p{p}", "query_id": "q1", "stage": s, "status": "scored",
         "prompt_tokens": prompt, "cached_prompt_tokens": cached, "output_tokens": output, "latency_s": 0.1}
        for p in range(pages) for s in ("content", "meta", "layout")
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=JUDGMENT_SCHEMA)


def test_projection_from_measured_tokens_and_wall_time():
    table = _judgments(pages=10, prompt=1000, cached=600, output=50)
    prices = {"gpu_hour": 2.0, "input": 1.0, "cached": 0.5, "output": 4.0}
    report = project(table, wall_s=36.0, gpus=2, prices=prices)
    assert report["pages"] == 10 and report["queries_per_page"] == 1.0
    expected = {"prompt_tokens": 3000.0, "cached_prompt_tokens": 1800.0, "prefill_tokens": 1200.0}
    assert report["tokens_per_page"]["total"] == {**expected, "output_tokens": 150.0}
    assert report["tokens_per_page"]["meta"]["prefill_tokens"] == 400.0
    assert report["prefix_cache_hit_rate"] == 0.6
    per_1m = report["per_1m_pages"]
    assert per_1m["gpu_hours"] == 36.0 / 3600 * 2 * 100_000  # 10 pages -> 1M is x100,000
    assert per_1m["cost_gpu"] == per_1m["gpu_hours"] * 2.0
    # 1M pages: 1.2e9 prefilled x $1 + 1.8e9 cached x $0.5 + 1.5e8 output x $4, per 1M tokens
    assert per_1m["cost_tokens"] == 1200 + 900 + 600


def test_cli_judges_a_sample_apart_from_the_run(tmp_path, run_uri, page_records, capsys):
    path = tmp_path / "requests.csv"
    pacsv.write_csv(requests_for(page_records), path)
    args = ["costbench", "--run", run_uri, "--requests", str(path), "--sample", "5"]
    assert main([*args, "--gpu-hour-price", "1.0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["engine"] == "signals" and report["pages"] == 5 and report["judgments"] == 5 * 2 * 3
    assert read_judgments(f"{run_uri}/costbench/sample").num_rows == 30
    assert not (tmp_path / "run" / "judgments").exists()  # the run's own judgments are untouched
