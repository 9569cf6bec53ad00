"""The audit config: YAML + --set overrides, strict validation with errors that name file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.base import apply_override
from crawler.config import CrawlConfig
from crawler.errors import InputError
from jobs.config import AuditConfig, load_config
from judge.config import JudgeConfig

REPO = Path(__file__).resolve().parents[2]
MINIMAL = ["store.run=runs/x", "inputs.queries=q.csv", "inputs.citations=c.jsonl"]


def test_demo_config_loads_with_the_components_own_types():
    config = load_config(str(REPO / "jobs" / "configs" / "demo.yaml"))
    assert isinstance(config.crawl, CrawlConfig) and isinstance(config.judge, JudgeConfig)
    assert config.judge.engine == "signals"
    assert config.crawl.replay_warcs == (str(REPO / "jobs/demo/demo.warc.gz"),)  # relative to the file
    assert config.store.run == str(REPO / "runs" / "demo")
    assert len(config.inputs.citations) == 3 and config.scoring.top_k == 5
    for path in [config.inputs.queries, *config.inputs.citations, *config.crawl.replay_warcs]:
        assert Path(path).is_file(), path


def test_overrides_are_parsed_as_yaml_and_win_over_the_file(tmp_path):
    path = tmp_path / "audit.yaml"
    path.write_text(
        "store: {run: runs/a}\ninputs: {queries: q.csv, citations: c.jsonl}\njudge: {engine: vllm}\n"
    )
    config = load_config(
        str(path),
        [
            "judge.engine=signals",
            "scoring.top_k=3",
            "crawl.ray_resources={crawler: 1}",
            "cluster.stream=false",
        ],
    )
    assert config.judge.engine == "signals" and config.scoring.top_k == 3
    assert config.crawl.ray_resources == {"crawler": 1.0} and config.cluster.stream is False
    assert config.inputs.citations == [str(tmp_path / "c.jsonl")]  # one path becomes a list
    assert config.store.run == str(tmp_path / "runs" / "a")  # paths in the file: relative to the file
    flagged = load_config(str(path), ["store.run=runs/b", "inputs.citations=[d.jsonl]"])
    assert flagged.store.run == "runs/b" and flagged.inputs.citations == ["d.jsonl"]  # --set: the cwd
    assert load_config(None, [*MINIMAL, "scoring.top_k=null"]).scoring.top_k is None


def test_config_round_trips_through_its_manifest_form():
    config = load_config(None, [*MINIMAL, "judge.prompts.current_date=2026-01-25"])
    assert AuditConfig.model_validate(config.to_dict()) == config


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("judge.engin=signals", "judge.engin"),  # typo: unknown keys are errors
        ("scoring.top_k=0", "scoring.top_k"),
        ("judge.engine=gpt", "judge.engine"),
        ("crawl.limits.timeout_s=-1", "crawl.limits.timeout_s"),
    ],
)
def test_bad_values_name_the_field(override, field):
    with pytest.raises(InputError) as err:
        load_config(None, [*MINIMAL, override])
    assert err.value.field == field and "--set" in str(err.value)


def test_missing_section_and_bad_yaml_name_the_file(tmp_path):
    path = tmp_path / "partial.yaml"
    path.write_text("store: {run: runs/a}\n")
    with pytest.raises(InputError) as err:
        load_config(str(path))
    assert str(path) in str(err.value) and err.value.field == "inputs"
    path.write_text("store: {run: [unclosed\n")
    with pytest.raises(InputError) as err:
        load_config(str(path))
    assert "malformed YAML" in str(err.value) and err.value.line is not None
    with pytest.raises(InputError, match="not found"):
        load_config(str(tmp_path / "absent.yaml"))


def test_override_syntax_errors():
    with pytest.raises(InputError, match="section.key=value"):
        apply_override({}, "no-equals-sign")
    with pytest.raises(InputError, match="not a section"):
        apply_override({"store": "flat"}, "store.run=x")
