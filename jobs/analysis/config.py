"""Typed configuration of the report (loadable from YAML, overridable from the CLI)."""

from __future__ import annotations

import os

from pydantic import Field

from crawler.base import ConfigModel, ConfigPath, read_yaml, validate_model


class Prices(ConfigModel):
    """Token prices for the cost estimate (USD per million tokens); leave unset to report tokens only."""

    usd_per_1m_prompt_tokens: float = Field(0.0, ge=0, description="Price of uncached prompt tokens.")
    usd_per_1m_cached_prompt_tokens: float | None = Field(
        None, ge=0, description="Price of prompt tokens served from the prefix cache (default: prompt price)."
    )
    usd_per_1m_output_tokens: float = Field(0.0, ge=0, description="Price of generated tokens.")


class ReportConfig(ConfigModel):
    """What the report computes and which optional inputs it joins."""

    serp_systems: list[str] = Field(
        default_factory=list,
        description="Systems whose citations are a search engine's ranked results (SERP overlap analysis).",
    )
    serp_top_k: int | None = Field(
        None, ge=1, description="Compare against the SERP's top k results only (None: all results)."
    )
    n_boot: int = Field(1000, ge=1, description="Bootstrap replicates (queries resampled with replacement).")
    seed: int = Field(0, description="Seed of the bootstrap draws; same seed, same intervals.")
    confidence_level: float = Field(0.95, gt=0, lt=1, description="Coverage of the bootstrap intervals.")
    system_metadata: ConfigPath | None = Field(
        None,
        description="CSV/JSON/YAML of system factors (system, model, retrieval_tool, ...) for ablations.",
    )
    ablations: list[tuple[str, str]] = Field(
        default_factory=list,
        description="Factor pairs (rows, columns) to tabulate; default: the first two metadata factors.",
    )
    correctness_labels: ConfigPath | None = Field(
        None, description="CSV system,query_id,correct to correlate each dimension with answer accuracy."
    )
    prices: Prices | None = Field(None, description="Token prices for the judge cost estimate.")
    min_cell_sources: int = Field(
        1, ge=1, description="Breakdown cells with fewer sources than this are left blank."
    )
    title: str | None = Field(None, description="Report title (default: 'SourceBench audit: <run name>').")

    @classmethod
    def from_yaml(cls, path: str) -> ReportConfig:
        """Load from a YAML file; a bad key or value raises :class:`InputError`."""
        data = read_yaml(path)
        # A report settings file, or an audit config whose `report:` section holds them.
        section = data["report"] if isinstance(data.get("report"), dict) else data
        if section is not data:
            return validate_model(
                cls, section, path, context={"config_dir": os.path.dirname(path)}, prefix="report"
            )
        return validate_model(cls, section, path, context={"config_dir": os.path.dirname(path)})
