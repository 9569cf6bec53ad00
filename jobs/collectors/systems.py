"""System definitions: the generative engines (OpenAI-compatible endpoints) and SERP files under test.

A systems file is JSON or YAML holding one definition, a list of them, or ``{"systems": [...]}``. The
official SourceBench endpoint-submission JSON (``submission_mode: "endpoint"``, ``model_name``,
``api_base``, ``api_key``, ``api_format``, ``web_search_mode``, ``generation_config``,
``system_prompt``...) is accepted as it is; a definition without ``kind`` is an endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from crawler.base import ConfigModel, InputError, read_data


class RequestPolicy(ConfigModel):
    """How hard to push one endpoint: concurrency, timeouts, retries."""

    max_concurrency: int = Field(
        4, ge=1, description="Requests in flight at once to this endpoint (api_base)."
    )
    timeout_s: float = Field(
        120.0, gt=0, description="Limit for one request (connect, write, read), seconds."
    )
    max_attempts: int = Field(
        4, ge=1, description="Tries per query, the first included, before a failure row."
    )
    backoff_base_s: float = Field(
        1.0, ge=0, description="First retry wait when the server gives no Retry-After; doubles per try."
    )
    backoff_max_s: float = Field(60.0, ge=0, description="Longest computed backoff wait, seconds.")
    requests_per_minute: float | None = Field(
        None,
        gt=0,
        description="Space request starts (retries included) to stay under this quota; none by default.",
    )
    max_retry_after_s: float = Field(
        300.0, ge=0, description="Longest Retry-After honoured; a longer one is cut to this many seconds."
    )


class EndpointSystem(ConfigModel):
    """A generative engine behind an OpenAI-compatible API (official endpoint submission fields)."""

    kind: Literal["endpoint"] = Field("endpoint", description="Always 'endpoint' for an API system.")
    name: str = Field("", description="Label of the system in the outputs; defaults to model_name.")
    model_name: str = Field(..., min_length=1, description="The `model` sent in every request.")
    api_base: str = Field(
        ..., description="Base URL up to and including /v1, e.g. https://api.openai.com/v1."
    )
    api: Literal["chat", "responses"] = Field(
        "chat",
        description="'chat' = POST {api_base}/chat/completions, 'responses' = POST {api_base}/responses.",
    )
    api_format: Literal["openai-compatible"] = Field(
        "openai-compatible", description="Wire format; only OpenAI-compatible APIs exist in official v1."
    )
    web_search_mode: Literal["built-in-search", "tool", "none"] = Field(
        "built-in-search",
        description="'built-in-search': the endpoint searches by itself, nothing is added to the request; "
        "'tool': request the web-search tool (Chat: web_search_options, Responses: a web_search tool and "
        "the action sources); 'none': a plain LLM without search.",
    )
    web_search_tool: dict[str, Any] = Field(
        default_factory=lambda: {"type": "web_search"},
        description="The Responses API tool object sent when web_search_mode is 'tool'.",
    )
    generation_config: dict[str, Any] = Field(
        default_factory=dict, description="Extra request fields (temperature, max_tokens, seed...)."
    )
    system_prompt: str | None = Field(None, description="System message (Chat) or instructions (Responses).")
    api_key: str | None = Field(
        None,
        repr=False,
        description="A reference env:NAME or ${NAME} (preferred), or a literal key; never written anywhere.",
    )
    api_key_env: str | None = Field(None, description="Environment variable holding the key.")
    policy: RequestPolicy = Field(
        default_factory=RequestPolicy, description="Concurrency, timeouts, retries."
    )
    # Official submission metadata: accepted, kept in the manifest, not used for requests.
    submission_mode: Literal["endpoint"] | None = Field(None, description="Official field; 'endpoint'.")
    model_version: str | None = Field(None, description="Official field: the model's version label.")
    submitter_name: str | None = Field(None, description="Official metadata field.")
    organization: str | None = Field(None, description="Official metadata field.")
    contact_email: str | None = Field(None, description="Official metadata field.")
    notes: str | None = Field(None, description="Official metadata field.")
    agrees_to_reproducibility_policy: bool | None = Field(None, description="Official metadata field.")

    @field_validator("api_base")
    @classmethod
    def _http_base(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError("api_base must be an http(s) URL")
        return value

    @model_validator(mode="after")
    def _default_name(self) -> EndpointSystem:
        if not self.name:
            self.name = self.model_name
        return self

    def public_view(self) -> dict[str, Any]:
        """The definition as it may appear in a manifest: everything but the key."""
        return self.model_dump(exclude={"api_key"}, exclude_none=True)


class SerpSystem(ConfigModel):
    """Ranked search-engine results per query, read from a CSV/JSON file (see :mod:`jobs.collectors.serp`)."""

    kind: Literal["serp"] = Field(..., description="Always 'serp'.")
    name: str = Field(..., min_length=1, description="Label of the engine in the outputs, e.g. 'google'.")
    results_path: str = Field(..., min_length=1, description="CSV, JSON or JSONL file of ranked results.")

    def public_view(self) -> dict[str, Any]:
        return self.model_dump()


System = Annotated[EndpointSystem | SerpSystem, Field(discriminator="kind")]
_SYSTEM = TypeAdapter(System)


def parse_system(
    source: str, where: str, record: Any, base_dir: Path | None = None
) -> EndpointSystem | SerpSystem:
    """Validate one definition; ``where`` is its record path (``systems[2]``) for the error message."""
    if not isinstance(record, dict):
        raise InputError(source, "expected an object", field=where)
    record = {"kind": "endpoint", **record}
    if record.get("submission_mode") not in (None, "endpoint"):
        raise InputError(
            source,
            f"submission_mode {record['submission_mode']!r} is not an endpoint (answer bundles are "
            "citation inputs: pass them to the audit)",
            field=f"{where}.submission_mode",
        )
    try:
        system = _SYSTEM.validate_python(record)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"] if p not in ("endpoint", "serp"))
        raise InputError(source, err["msg"], field=f"{where}.{loc}" if loc else where) from None
    if (
        isinstance(system, SerpSystem)
        and base_dir is not None
        and not Path(system.results_path).is_absolute()
    ):
        if "://" not in system.results_path:
            system.results_path = str(base_dir / system.results_path)
    return system


def load_systems(path: str | Path) -> list[EndpointSystem | SerpSystem]:
    """Read a systems file (JSON or YAML: one definition, a list, or ``{"systems": [...]}``)."""
    source = str(path)
    data = read_data(path, "systems file")
    if isinstance(data, dict) and "systems" in data:
        records, prefix = data["systems"], "systems"
    elif isinstance(data, list):
        records, prefix = data, ""
    else:
        records, prefix = [data], None
    if not isinstance(records, list):
        raise InputError(source, "expected a list of system definitions", field="systems")
    systems = []
    for i, record in enumerate(records):
        where = f"{prefix}[{i}]" if prefix is not None else "(root)"
        systems.append(parse_system(source, where, record, Path(path).parent))
    check_unique_names(source, systems)
    return systems


def check_unique_names(source: str, systems: list[EndpointSystem | SerpSystem]) -> None:
    seen: set[str] = set()
    for system in systems:
        if system.name in seen:
            raise InputError(
                source, f"two systems are named {system.name!r}; give each a distinct name", field="name"
            )
        seen.add(system.name)
