"""The JSON a judge must answer with: its schema per stage, validation, and the repair request."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from judge.rubric import SCORE_MAX, SCORE_MIN, stage_dimensions


def stage_json_schema(stage: str, justification_max_chars: int = 300) -> dict[str, Any]:
    """JSON schema of one stage's answer: ``{"<key>": {"justification": str, "score": 1..5}, ...}``.

    The justification comes first so that a left-to-right decoder writes its reason before its score.
    """
    entry = {
        "type": "object",
        "properties": {
            "justification": {"type": "string", "maxLength": justification_max_chars},
            "score": {"type": "integer", "enum": list(range(SCORE_MIN, SCORE_MAX + 1))},
        },
        "required": ["justification", "score"],
        "additionalProperties": False,
    }
    keys = [d.key for d in stage_dimensions(stage)]
    return {
        "type": "object",
        "properties": {key: entry for key in keys},
        "required": keys,
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class ParsedScores:
    """A validated answer: one (dimension, score, justification) per dimension of the stage."""

    scores: tuple[tuple[str, int, str], ...]

    def as_rows(self) -> list[dict[str, Any]]:
        return [{"dimension": k, "score": s, "justification": j} for k, s, j in self.scores]


class OutputError(ValueError):
    """The judge's answer is not valid JSON for the stage."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_stage_output(stage: str, text: str | None) -> ParsedScores:
    """Validate a judge answer for a stage; raise OutputError saying what is wrong.

    Accepted: the JSON object alone, or inside a Markdown code fence; raw control characters inside
    strings are tolerated and replaced by spaces in the justification. Scores must be integers 1-5
    (numeric strings such as "4" are accepted, as in the official reduce); no default is ever filled in.
    """
    if not text or not text.strip():
        raise OutputError("empty output")
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        # strict=False: raw control characters inside strings (xgrammar lets a model emit them) are read;
        # they are turned into spaces below. Everything else about the JSON must be right.
        data = json.loads(body, strict=False)
    except json.JSONDecodeError as exc:
        raise OutputError(f"not valid JSON: {exc.msg} at char {exc.pos}") from exc
    if not isinstance(data, dict):
        raise OutputError("expected a JSON object")
    scores = []
    for dim in stage_dimensions(stage):
        entry = data.get(dim.key)
        if not isinstance(entry, dict):
            raise OutputError(f"missing object for '{dim.key}'")
        score = entry.get("score")
        if isinstance(score, str) and score.strip().isdigit():
            score = int(score.strip())
        if isinstance(score, bool) or not isinstance(score, int):
            raise OutputError(f"'{dim.key}.score' is not an integer: {score!r}")
        if not SCORE_MIN <= score <= SCORE_MAX:
            raise OutputError(f"'{dim.key}.score' {score} is outside {SCORE_MIN}-{SCORE_MAX}")
        justification = entry.get("justification")
        text_value = _CONTROL.sub(" ", justification) if isinstance(justification, str) else ""
        scores.append((dim.key, score, text_value))
    return ParsedScores(tuple(scores))


def repair_messages(messages: list[dict[str, str]], bad_output: str, problem: str) -> list[dict[str, str]]:
    """The conversation for one repair retry: the original request, the bad answer, and what to fix."""
    return [
        *messages,
        {"role": "assistant", "content": bad_output[:4000]},
        {
            "role": "user",
            "content": f"That answer could not be used ({problem}). Reply again with only the JSON object "
            "in the requested format: every listed key, each with a justification string and an integer "
            "score from 1 to 5.",
        },
    ]
