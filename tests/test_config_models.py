"""Every config model rejects an unknown key and names its dotted path; one base, one loader."""

from __future__ import annotations

import copy
import importlib
import inspect
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from crawler.base import ConfigModel, InputError, load_model, read_yaml, validate_model
from jobs.config import AuditConfig
from tests.test_imports import MODULES


def project_models() -> list[type[BaseModel]]:
    """Every pydantic model defined in the shipped packages."""
    found = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseModel) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


MODELS = project_models()


def test_every_model_derives_from_the_one_base() -> None:
    assert len(MODELS) >= 20
    assert [m.__qualname__ for m in MODELS if not issubclass(m, ConfigModel) and m is not ConfigModel] == []


@pytest.mark.parametrize("model", MODELS, ids=[f"{m.__module__}.{m.__qualname__}" for m in MODELS])
def test_unknown_key_is_an_error_naming_it(model: type[BaseModel]) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"zz_typo": 1})
    assert any(e["type"] == "extra_forbidden" and e["loc"] == ("zz_typo",) for e in caught.value.errors())


def nested_sections(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted paths of every nested config model reachable from ``model`` (AuditConfig's sections)."""
    paths = []
    for name, field in model.model_fields.items():
        for candidate in [field.annotation, *getattr(field.annotation, "__args__", ())]:
            if inspect.isclass(candidate) and issubclass(candidate, BaseModel):
                path = f"{prefix}{name}"
                paths.append(path)
                paths += nested_sections(candidate, path + ".")
    return paths


SECTIONS = nested_sections(AuditConfig)
MINIMAL = {"store": {"run": "runs/x"}, "inputs": {"queries": "q.csv", "citations": ["c.jsonl"]}}


def test_the_audit_config_reaches_the_sections_that_let_typos_pass() -> None:
    for path in ("cluster.ray", "reduce", "report.prices", "crawl.politeness", "judge.vllm", "judge.prompts"):
        assert path in SECTIONS


@pytest.mark.parametrize("section", SECTIONS)
def test_a_typo_in_any_section_names_its_dotted_path(section: str, tmp_path: Path) -> None:
    tree = copy.deepcopy(MINIMAL)
    node = tree
    for part in section.split("."):
        node = node.setdefault(part, {})
    node["zz_typo"] = 1
    with pytest.raises(InputError) as caught:
        validate_model(AuditConfig, tree, "audit.yaml")
    assert caught.value.field == f"{section}.zz_typo" and "unknown key" in str(caught.value)


def test_reduce_typo_no_longer_runs_with_the_default(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(
        "store: {run: r}\ninputs: {queries: q.csv, citations: c.json}\nreduce: {bootstap_replicates: 10}\n"
    )
    with pytest.raises(InputError, match="reduce.bootstap_replicates"):
        load_model(AuditConfig, path)


@pytest.mark.parametrize(
    "content,message",
    [
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"a: 1\nb: \x00\n", "binary"),
        (b"- a\n- b\n", "mapping"),
        (b"a: [\n", "malformed YAML"),
        (b"42\n", "mapping"),
    ],
)
def test_the_loader_names_the_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as caught:
        read_yaml(path)
    assert caught.value.source == str(path)


def test_the_loader_on_folders_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="directory"):
        read_yaml(tmp_path)
    with pytest.raises(InputError, match="not found"):
        read_yaml(tmp_path / "absent.yaml")
    assert read_yaml(_write(tmp_path / "empty.yaml", "")) == {}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_paths_are_relative_to_the_config_file_and_overrides_to_the_cwd(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    path = _write(
        tmp_path / "conf" / "a.yaml",
        "store: {run: ../runs/a}\ninputs: {queries: q.csv, citations: [s3://b/c.json, /abs/c.json]}\n"
        "crawl: {replay_warcs: [w.warc.gz]}\n",
    )
    config = load_model(AuditConfig, path, ["inputs.serp={g: g.csv}"])
    assert config.store.run == str(tmp_path / "runs" / "a")
    assert config.inputs.queries == str(tmp_path / "conf" / "q.csv")
    assert config.inputs.citations == ["s3://b/c.json", "/abs/c.json"]  # URIs and absolute paths stay
    assert config.crawl.replay_warcs == (str(tmp_path / "conf" / "w.warc.gz"),)
    assert config.inputs.serp == {"g": "g.csv"}  # from the command line: relative to the cwd


def test_each_config_declares_its_fingerprint_fields() -> None:
    """Execution fields sit next to the fields and stay out of the fingerprint."""
    from crawler.config import CrawlConfig
    from jobs.leaderboard.config import ReduceConfig

    for model in (CrawlConfig, ReduceConfig):
        assert model.execution_fields and model.execution_fields <= set(model.model_fields)
    crawl = CrawlConfig()
    assert "shard_size" not in crawl.fingerprint_payload() and "politeness" in crawl.fingerprint_payload()
    assert CrawlConfig(shard_size=7).fingerprint_payload() == crawl.fingerprint_payload()
    # a nested config's execution fields stay out too: runs from before the field was added resume
    base = crawl.fingerprint_payload()
    assert "pacing_checkpoint_s" not in base["politeness"]
    assert CrawlConfig(politeness={"pacing_checkpoint_s": 5}).fingerprint_payload() == base
    assert CrawlConfig(politeness={"download_delay_s": 5}).fingerprint_payload() != base
    assert ReduceConfig(executor="local").fingerprint_payload() == ReduceConfig().fingerprint_payload()
    assert ReduceConfig(policy="complete").fingerprint_payload() != ReduceConfig().fingerprint_payload()
