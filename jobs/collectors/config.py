"""The configuration of one ``sourcebench collect`` run (YAML file and/or command-line flags)."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field, model_validator

from crawler.base import ConfigModel, ConfigPath, InputError, from_command_line, read_yaml, validate_model


class CollectConfig(ConfigModel):
    """What to ask, whom to ask, and where to write."""

    out: ConfigPath = Field(..., description="Run directory: a local path or s3://bucket/prefix.")
    systems: list[ConfigPath] = Field(
        default_factory=list, description="System definition files (JSON/YAML)."
    )
    serp: list[str] = Field(default_factory=list, description="SERP result files as NAME=PATH.")
    queries: ConfigPath | None = Field(
        None, description="Queries CSV (query_id,query,query_type[,language])."
    )
    template: ConfigPath | None = Field(None, description="Query template file, expanded across `languages`.")
    languages: list[str] = Field(default_factory=list, description="Languages to expand the template to.")
    language: str | None = Field(None, description="Language tag for CSV queries that have none.")
    skip_missing_translations: bool = Field(False, description="Skip, not fail on, a missing translation.")
    sample_per_stratum: int | None = Field(
        None, ge=1, description="Draw at most this many queries per (query_type, language)."
    )
    seed: int = Field(0, description="Seed of the stratified draw and of the backoff jitter.")
    secrets: ConfigPath | None = Field(
        None, description="Secrets file: a JSON/YAML mapping of names to API keys."
    )
    chunk_size: int = Field(25, ge=1, description="(system, query) pairs per committed chunk.")
    retry_failed: bool = Field(False, description="Ask again the pairs whose committed status is not ok.")
    max_concurrency: int | None = Field(None, ge=1, description="Override every endpoint's max_concurrency.")
    timeout_s: float | None = Field(None, gt=0, description="Override every endpoint's request timeout.")
    max_attempts: int | None = Field(None, ge=1, description="Override every endpoint's max_attempts.")

    @model_validator(mode="after")
    def _one_query_source(self) -> CollectConfig:
        if bool(self.queries) == bool(self.template):
            raise ValueError("give exactly one of queries (a CSV) or template (a template file)")
        if self.languages and not self.template:
            raise ValueError("languages expand a template; for a queries CSV use language (the default tag)")
        if not self.systems and not self.serp:
            raise ValueError("give at least one systems file or SERP file")
        for item in self.serp:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise ValueError(f"serp entries are NAME=PATH, got {item!r}")
        return self

    def policy_overrides(self) -> dict[str, Any]:
        names = ("max_concurrency", "timeout_s", "max_attempts")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}


def load_collect_config(path: str | None, overrides: dict[str, Any]) -> CollectConfig:
    """A YAML config file (optional) with command-line values on top (None values are ignored)."""
    data: dict[str, Any] = {}
    if path:
        data.update(read_yaml(path))
    given = {k: v for k, v in overrides.items() if v not in (None, [], False)}
    data.update(from_command_line(given))  # flag paths stay relative to the working directory
    context = {"config_dir": os.path.dirname(path) if path else None}
    try:
        return validate_model(CollectConfig, data, path or "command line", context=context)
    except InputError as exc:
        if path and (exc.field or "").split(".")[0] in given:
            raise InputError("command line", exc.reason, field=exc.field) from None
        raise
