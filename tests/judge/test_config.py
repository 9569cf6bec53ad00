"""JudgeConfig: shipped configs load, overrides apply, bad input names file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.errors import InputError
from judge import JudgeConfig

CONFIGS = Path(__file__).resolve().parents[2] / "judge" / "configs"


@pytest.mark.parametrize("name", ["official_like.yaml", "qwen_plus_api.yaml"])
def test_shipped_configs_load(name: str):
    config = JudgeConfig.from_yaml(CONFIGS / name)
    assert config.prompts.layout == "paper" and config.prompts.today.isoformat() == "2026-01-25"
    assert config.sampling.temperature == 0.0


def test_defaults_are_the_embedded_signals_judge_and_overrides_use_dotted_keys():
    assert JudgeConfig().engine == "signals" and JudgeConfig().model_name == "signals"
    config = JudgeConfig.from_dict({}, overrides={"engine": "vllm", "vllm.model": "/models/q"})
    assert config.model_name == "/models/q" and config.vllm.enable_thinking is False


def test_bad_values_name_the_file_and_field(tmp_path):
    path = tmp_path / "j.yaml"
    path.write_text("judge:\n  openai: {concurrency: 0}\n")
    with pytest.raises(InputError) as err:
        JudgeConfig.from_yaml(path)
    assert err.value.field == "openai.concurrency" and str(path) in str(err.value)
    path.write_text("judge: [unclosed\n")
    with pytest.raises(InputError, match="malformed YAML"):
        JudgeConfig.from_yaml(path)
    with pytest.raises(InputError, match="unknown_field|Extra inputs"):
        JudgeConfig.from_dict({"unknown_field": 1})
