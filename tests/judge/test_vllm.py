"""The vllm engine: the real vLLM CPU engine with a tiny random Qwen2, through Ray Data LLM."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from judge import JudgeConfig, content_vectors, judge_run
from judge.output import parse_stage_output
from judge.run import accounting, read_judgments
from tests.judge.conftest import OFFICIAL_DATE, requests_for, write_run

pytestmark = pytest.mark.slow


def _config(model_dir) -> JudgeConfig:
    return JudgeConfig.from_dict({
        "engine": "vllm",
        "prompts": {"layout": "shared", "current_date": OFFICIAL_DATE.isoformat(), "token_budget": 6000,
                    "justification_max_chars": 100},
        "sampling": {"max_tokens": 1024},
        "write_batch_size": 32,
        "vllm": {
            "model": str(model_dir), "max_model_len": 8192, "batch_size": 16,
            "placement_bundles": [{"CPU": 1}], "engine_kwargs": {"enforce_eager": True},
            "env_vars": {"VLLM_CPU_KVCACHE_SPACE": "2"},
        },
    })  # fmt: skip


def test_ray_data_llm_judgments_validate_hit_the_prefix_cache_and_land_in_parquet(
    tmp_path, page_records, tiny_model, local_ray
):
    pages = page_records.slice(0, 10)
    run = write_run(tmp_path, pages)
    requests = requests_for(pages, limit=10)
    config = _config(tiny_model)
    summary = judge_run(run, requests, config)
    table = read_judgments(run)
    assert table.num_rows == 10 * 2 * 3
    assert summary["statuses"] == {"scored": table.num_rows}
    for row in table.to_pylist():
        parse_stage_output(row["stage"], row["raw_output"])  # every output validates
        assert row["engine"] == "vllm" and row["prompt_layout"] == "shared"
        assert row["prompt_tokens"] > 0 and row["output_tokens"] > 0
    totals = accounting(table)["total"]
    assert (
        totals["cached_prompt_tokens"] > 0
        and summary["cached_prompt_tokens"] == totals["cached_prompt_tokens"]
    )
    # The page prefix is shared: the meta and layout requests of a page reuse what content computed.
    later = table.filter(pc.is_in(table["stage"], pa.array(["meta", "layout"])))
    assert pc.sum(later["cached_prompt_tokens"]).as_py() > 0.5 * pc.sum(later["prompt_tokens"]).as_py()
    vectors = content_vectors(table)
    assert vectors.num_rows == 20 and set(vectors["judge_status"].to_pylist()) == {"scored"}
    again = judge_run(run, requests, config)  # resume: nothing left to do, no engine started
    assert again["judged"] == 0 and read_judgments(run).num_rows == table.num_rows
