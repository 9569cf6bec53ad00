"""Validation of judge answers: schema, range 1-5, no default scores."""

from __future__ import annotations

import json

import pytest

from judge.output import OutputError, parse_stage_output, stage_json_schema


def _answer(**scores) -> str:
    return json.dumps({k: {"justification": "why", "score": v} for k, v in scores.items()})


def test_valid_answers_parse_in_rubric_order():
    text = _answer(objectivity_tone=4, semantic_relevance=5, factual_accuracy="3")
    parsed = parse_stage_output("content", f"```json\n{text}\n```")
    assert [(k, s) for k, s, _ in parsed.scores] == [
        ("semantic_relevance", 5), ("factual_accuracy", 3), ("objectivity_tone", 4)
    ]  # fmt: skip


def test_raw_control_characters_in_a_justification_are_tolerated_and_cleaned():
    text = '{"layout_ad_density":{"justification":"clean\x0fpage\nok","score":5}}'
    assert parse_stage_output("layout", text).scores == (("layout_ad_density", 5, "clean page ok"),)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "empty"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        (_answer(layout_ad_density=0), "outside 1-5"),
        (_answer(layout_ad_density=6), "outside 1-5"),
        (_answer(layout_ad_density=4.5), "not an integer"),
        (_answer(layout_ad_density=True), "not an integer"),
        (json.dumps({"layout_ad_density": {"justification": "x"}}), "not an integer"),
        (json.dumps({"other": 1}), "missing object for 'layout_ad_density'"),
    ],
)
def test_invalid_answers_raise_and_never_default(text: str, problem: str):
    with pytest.raises(OutputError, match=problem):
        parse_stage_output("layout", text)


def test_schema_requires_every_stage_key_and_bounds_scores():
    schema = stage_json_schema("meta", justification_max_chars=120)
    assert schema["required"] == ["freshness", "accountability", "transparency", "authority"]
    entry = schema["properties"]["freshness"]
    assert entry["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert entry["properties"]["justification"]["maxLength"] == 120
    assert list(entry["properties"]) == ["justification", "score"]  # reason first, then score
