"""What every engine returns for one request, and the parse-and-repair loop shared by LLM engines."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from judge.output import OutputError, ParsedScores, parse_stage_output, repair_messages


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
