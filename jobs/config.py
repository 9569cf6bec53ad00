"""The audit's configuration: one typed object, one sub-config per concern, from YAML plus CLI overrides.

A config file is YAML whose top-level keys are the sections below::

    store: {run: runs/demo}
    inputs: {queries: jobs/demo/queries.csv, citations: [jobs/demo/citations/demo-careful.json]}
    crawl: {replay_warcs: [jobs/demo/demo.warc.gz]}
    judge: {engine: signals}

and ``--set section.key=value`` overrides any field (the value is parsed as YAML, so ``--set
scoring.top_k=3`` gives an int and ``--set cluster.crawl_resources={crawler: 1}`` a mapping). Relative
paths are relative to the working directory of the job (the repository root for ``make demo`` and for
``ray job submit --working-dir .``). Unknown keys are errors, so a typo never passes silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from crawler.config import CrawlConfig
from crawler.errors import InputError, validate_model
from jobs.analysis import ReportConfig
from jobs.coverage import CoverageConfig
from jobs.ray_runtime import RayConfig
from jobs.reduce import ReduceConfig
from judge.config import JudgeConfig


class Section(BaseModel):
    """Base of every section: unknown keys are rejected, values are checked on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StoreConfig(Section):
    """Where the run lives."""

    run: str = Field(description="Run directory URI: a local path (runs/demo) or s3://bucket/prefix/run.")


class InputsConfig(Section):
    """The audit's inputs (read with jobs.inputs; formats are auto-detected)."""

    queries: str = Field(description="Queries CSV in the official format query_id,query,query_type.")
    citations: list[str] = Field(
        description="Citation files: JSONL/CSV/Parquet, answer_url_bundle JSON, or official scraped JSON.",
        min_length=1,
    )
    system: str | None = Field(
        default=None, description="System name for single-system citation files that do not name one."
    )
    serp: dict[str, str] = Field(
        default_factory=dict,
        description="Search engines as systems of kind SERP: name -> ranked results file "
        "(CSV query_id,rank,url, "
        "JSONL or JSON; docs/collect.md). Audited like any system, and the report's SERP overlap "
        "compares the other systems with them unless report.serp_systems says otherwise.",
    )

    @field_validator("citations", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class ScoringConfig(Section):
    """How cited URLs become scored sources."""

    top_k: int | None = Field(
        default=5,
        ge=1,
        description="Sources kept per (system, query): the official top-5. Citations with the official "
        "selected_topk flag use it; others keep their first k distinct canonical URLs by rank. "
        "null keeps all.",
    )


class ClusterConfig(Section):
    """Where the job runs and how its stages overlap.

    The two resource pools are set where the work is placed: ``crawl.ray_resources`` (e.g.
    ``{crawler: 1}``) pins crawl shards to the CPU crawl node type, ``judge.vllm.accelerator_type`` and
    ``judge.vllm.placement_bundles`` pin vLLM engines to the GPU judge node type. Both default to
    none, so everything runs on a laptop's local Ray.
    """

    ray: RayConfig = Field(default_factory=RayConfig, description="How the job reaches Ray.")
    stream: bool = Field(
        default=True,
        description="Judge pages while the crawl is still running: each committed crawl part is judged as "
        "soon as it lands, so crawl nodes and judge nodes are busy at the same time.",
    )
    poll_s: float = Field(
        default=2.0, gt=0, description="How often the streaming judge looks for newly committed pages."
    )
    stream_min_requests: int = Field(
        default=512,
        ge=1,
        description="New page x query requests the streaming judge waits for before it starts a judge pass "
        "(each pass starts an engine; the last pass takes whatever is left).",
    )


class AuditConfig(Section):
    """Everything one audit run needs; recorded in the run manifest."""

    store: StoreConfig
    inputs: InputsConfig
    crawl: CrawlConfig = Field(default_factory=CrawlConfig, description="The crawler (crawler.CrawlConfig).")
    judge: JudgeConfig = Field(default_factory=JudgeConfig, description="The judge (judge.JudgeConfig).")
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    reduce: ReduceConfig = Field(default_factory=ReduceConfig, description="The reduce (jobs.reduce).")
    report: ReportConfig | None = Field(
        default_factory=ReportConfig, description="The report (jobs.analysis.ReportConfig); null: no report."
    )
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    coverage: CoverageConfig = Field(
        default_factory=CoverageConfig,
        description="When the audit counts as complete (jobs.coverage): below it the audit exits non-zero.",
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as recorded in the manifest."""
        return self.model_dump(mode="json")


def apply_override(tree: dict[str, Any], assignment: str, source: str = "--set") -> None:
    """Apply one ``dotted.key=value`` override to a nested dict (the value is parsed as YAML)."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise InputError(source, f"override {assignment!r} is not of the form section.key=value")
    parts = key.strip().split(".")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise InputError(source, f"{'.'.join(parts)}: {part!r} is not a section", field=key)
        node = child
    try:
        node[parts[-1]] = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise InputError(source, f"value of {key} is not valid YAML: {exc}", field=key) from None


def read_yaml(path: str) -> dict[str, Any]:
    """Read a YAML config file into a dict (an empty file is an empty config)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "config file not found") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, f"malformed YAML: {exc}", line=mark.line + 1 if mark else None) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(path, f"expected a mapping of sections, got {type(data).__name__}")
    return data


def load_config(path: str | None = None, overrides: list[str] | None = None) -> AuditConfig:
    """Build the audit config from an optional YAML file and ``section.key=value`` overrides.

    Raises:
        InputError: naming the file (or ``--set``) and the dotted field of the first invalid value.
    """
    tree = read_yaml(path) if path else {}
    for assignment in overrides or []:
        apply_override(tree, assignment)
    return validate_model(AuditConfig, tree, path or "--set")
