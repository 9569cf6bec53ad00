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

from typing import Any

from pydantic import ConfigDict, Field, field_validator

from crawler.base import ConfigModel, ConfigPath, load_model
from crawler.config import CrawlConfig
from jobs.analysis.config import ReportConfig
from jobs.coverage import CoverageConfig
from jobs.leaderboard.config import ReduceConfig
from jobs.ray_runtime import RayConfig
from judge.config import JudgeConfig


class Section(ConfigModel):
    """Base of every section: unknown keys are rejected, values are checked on assignment too."""

    model_config = ConfigDict(validate_assignment=True)


class StoreConfig(Section):
    """Where the run lives."""

    run: ConfigPath = Field(
        description="Run directory URI: a local path (runs/demo) or s3://bucket/prefix/run."
    )


class InputsConfig(Section):
    """The audit's inputs (read with jobs.inputs; formats are auto-detected)."""

    queries: ConfigPath = Field(description="Queries CSV in the official format query_id,query,query_type.")
    citations: list[ConfigPath] = Field(
        description="Citation files: JSONL/CSV/Parquet, answer_url_bundle JSON, or official scraped JSON.",
        min_length=1,
    )
    system: str | None = Field(
        default=None, description="System name for single-system citation files that do not name one."
    )
    serp: dict[str, ConfigPath] = Field(
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


def load_config(path: str | None = None, overrides: list[str] | None = None) -> AuditConfig:
    """Build the audit config from an optional YAML file and ``section.key=value`` overrides.

    Raises:
        InputError: naming the file (or ``--set``) and the dotted field of the first invalid value.
    """
    return load_model(AuditConfig, path, overrides or [])
