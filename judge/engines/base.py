"""What every engine returns for one request, and the parse-and-repair loop shared by LLM engines."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from judge.output import OutputError, ParsedScores, parse_stage_output, repair_messages
from judge.packet import StageRequest

if TYPE_CHECKING:
    from ray.data import Dataset


@dataclass(frozen=True)
class Completion:
    """One engine answer (or failure) for one request, with its accounting."""

    key: str
    """The request's judgment_key."""
    text: str | None
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None
    """Transport or engine failure after all retries (the answer is then None)."""


@dataclass(frozen=True)
class Prompt:
    """A chat request to an LLM engine."""

    key: str
    messages: list[dict[str, str]]
    json_schema: dict


@dataclass(frozen=True)
class Outcome:
    """A finished request: parsed scores, or the reason there are none."""

    completion: Completion
    status: str
    """scored | unscorable | error"""
    scores: ParsedScores | None = None
    problem: str | None = None


def _add(first: Completion, second: Completion) -> Completion:
    return replace(
        second,
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        cached_prompt_tokens=first.cached_prompt_tokens + second.cached_prompt_tokens,
        output_tokens=first.output_tokens + second.output_tokens,
        latency_s=first.latency_s + second.latency_s,
    )


def parse_with_repair(
    prompts: list[Prompt],
    stage_of: dict[str, str],
    generate: Callable[[list[Prompt]], Iterable[Completion]],
    repair_retries: int,
) -> Iterator[Outcome]:
    """Run prompts, yield outcomes as they finish; re-ask invalid answers up to ``repair_retries`` times.

    A request whose answer is still invalid ends ``unscorable`` with its raw output; one whose
    transport failed ends ``error``. Nothing gets a default score.
    """
    by_key = {p.key: p for p in prompts}
    pending: list[tuple[Prompt, Completion, str]] = []
    for completion in generate(prompts):
        outcome = outcome_of(completion, stage_of[completion.key])
        if outcome.status == "unscorable" and repair_retries > 0:
            pending.append((by_key[completion.key], completion, outcome.problem or ""))
        else:
            yield outcome
    for round_no in range(repair_retries):
        if not pending:
            return
        earlier = {p.key: (c, problem) for p, c, problem in pending}
        retry = [
            Prompt(p.key, repair_messages(p.messages, c.text or "", problem), p.json_schema)
            for p, c, problem in pending
        ]
        pending = []
        for completion in generate(retry):
            first, _ = earlier[completion.key]
            merged = _add(first, completion)
            outcome = outcome_of(merged, stage_of[completion.key])
            if outcome.status == "unscorable" and round_no < repair_retries - 1:
                pending.append((by_key[completion.key], merged, outcome.problem or ""))
            else:
                yield outcome


def outcome_of(completion: Completion, stage: str) -> Outcome:
    """Validate one completion: scored, unscorable (bad JSON), or error (no answer)."""
    if completion.error is not None:
        return Outcome(completion, "error", problem=completion.error)
    try:
        return Outcome(completion, "scored", scores=parse_stage_output(stage, completion.text))
    except OutputError as exc:
        return Outcome(completion, "unscorable", problem=str(exc))


@dataclass(frozen=True)
class Judged:
    """One request's outcome, and how many page characters its prompt left out."""

    request: StageRequest
    outcome: Outcome
    truncated_chars: int = 0


class PromptStage(Protocol):
    """What a judge needs of an engine that judges as a Ray Data stage over prompt rows (vLLM)."""

    def render_rows(self, requests: Sequence[StageRequest]) -> list[dict[str, Any]]:
        """One prompt row per request, in order (``key, messages_json, schema, truncated_chars``)."""

    def __call__(self, prompts: Dataset, carry: Sequence[str] = ("key",)) -> Dataset:
        """The engine stage: prompt rows in; the ``carry`` columns plus ``text``, token counts and
        ``error`` out (:func:`judge.engines.vllm_ray.completion_of` reads them)."""

    def generate(self, prompts: list[Prompt]) -> Iterable[Completion]:
        """Judge a few prompts in one pass (the repairs of invalid answers)."""


class JudgeEngine(Protocol):
    """A judge engine: what decides its outputs (for cache keys), and how it judges requests.

    An engine judges inside the unit workers (``judge``: the signals rules, an HTTP endpoint), or
    provides a Ray Data stage that the pipeline puts between rendering and parsing (``prompt_stage``:
    vLLM engine actors). Engine-specific settings (batch sizes, passes) stay inside the engine.
    """

    name: str

    @property
    def model(self) -> str:
        """The model recorded in judgments."""

    @property
    def prompt_layout(self) -> str | None:
        """The prompt layout recorded in judgments (None for an engine without prompts)."""

    def identity(self, stage: str) -> dict:
        """Everything besides the page and query that decides a stage's answer (part of every key)."""

    def prompt_version(self, stage: str) -> str:
        """The version of a stage's fixed prompt text (or rules)."""

    def judge(self, requests: Sequence[StageRequest]) -> Iterator[Judged]:
        """Outcomes of the requests, in completion order (called inside a unit worker)."""

    def prompt_stage(self) -> PromptStage | None:
        """The Ray Data stage this engine judges with, or None when it judges inside unit workers."""
