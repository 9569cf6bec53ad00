"""Citation extraction from response bodies: order of preference, URL hygiene, malformed bodies."""

from __future__ import annotations

import pytest

from jobs.collectors import KeyRing, links_in_text, parse_answer
from jobs.collectors.client import request_body
from jobs.collectors.systems import EndpointSystem


def test_links_in_text_markdown_first_then_bare_with_punctuation_trimmed():
    text = (
        "See https://example.org/a. Also (https://example.org/b), "
        "[Wiki](https://en.wikipedia.org/wiki/Foo_(bar)) "
        "and https://example.org/a again; <https://example.org/c>. ftp://nope.example/ is not web."
    )
    assert links_in_text(text) == [
        "https://en.wikipedia.org/wiki/Foo_(bar)",
        "https://example.org/a",
        "https://example.org/b",
        "https://example.org/c",
    ]
    assert links_in_text(None) == [] and links_in_text("no links here") == []


def test_chat_annotations_flat_or_nested_and_provider_search_results():
    raw = {
        "choices": [
            {
                "message": {
                    "content": "x https://t.example/",
                    "annotations": [
                        {
                            "type": "url_citation",
                            "url_citation": {"url": "https://a.example/1", "title": "a"},
                        },
                        {"type": "url_citation", "url": "https://a.example/2"},
                        {"type": "url_citation", "url_citation": {"url": "https://a.example/1"}},
                        {"type": "file_citation", "file_id": "f"},
                    ],
                },
                "finish_reason": "stop",
            }
        ],
        "search_results": [{"url": "https://s.example/"}],
    }
    parsed = parse_answer(raw, "chat")
    assert (
        parsed.urls == ["https://a.example/1", "https://a.example/2"]
        and parsed.citation_source == "annotations"
    )
    raw["choices"][0]["message"]["annotations"] = None
    parsed = parse_answer(raw, "chat")
    assert (parsed.urls, parsed.citation_source) == (["https://s.example/"], "search_results")
    raw.pop("search_results")
    raw["citations"] = ["https://p.example/1", {"url": "https://p.example/2"}]
    assert parse_answer(raw, "chat").urls == ["https://p.example/1", "https://p.example/2"]


def test_chat_content_as_parts_and_empty_answer():
    raw = {
        "choices": [{"message": {"content": [{"type": "text", "text": "a "}, {"type": "text", "text": "b"}]}}]
    }
    assert parse_answer(raw, "chat").text == "a b"
    parsed = parse_answer({"choices": [{"message": {"content": None}}]}, "chat")
    assert parsed.text is None and parsed.urls == [] and parsed.citation_source == "none"


def test_responses_incomplete_reason_and_reasoning_items():
    raw = {
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "content": [{"type": "output_text", "text": "partial", "annotations": []}]},
        ],
        "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
    }
    parsed = parse_answer(raw, "responses")
    assert (
        parsed.text == "partial"
        and parsed.finish_reason == "max_output_tokens"
        and parsed.usage["total_tokens"] == 5
    )


@pytest.mark.parametrize(
    "raw,api", [({"choices": []}, "chat"), ({"id": "x"}, "chat"), ({"output": "x"}, "responses")]
)
def test_malformed_bodies_raise_value_error(raw, api):
    with pytest.raises(ValueError):
        parse_answer(raw, api)


def test_request_bodies_for_each_api_and_search_mode():
    base = {
        "model_name": "m",
        "api_base": "http://h/v1",
        "system_prompt": "S",
        "generation_config": {"seed": 1},
    }
    path, body = request_body(EndpointSystem(**base, web_search_mode="tool"), "Q")
    assert path == "/chat/completions" and body["web_search_options"] == {} and body["seed"] == 1
    assert body["messages"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]
    path, body = request_body(EndpointSystem(**base, api="responses"), "Q")
    assert path == "/responses" and body == {"model": "m", "input": "Q", "instructions": "S", "seed": 1}


def test_keyring_redacts_known_keys_and_bearer_tokens():
    ring = KeyRing({"sys": "sk-abcdef123456"}, environ={})
    key, origin = ring.resolve("sys", None, None)
    assert (key, origin) == ("sk-abcdef123456", "secrets file")
    text = "key sk-abcdef123456 and Authorization: Bearer other-token-999"
    assert ring.redact(text) == "key [REDACTED] and Authorization: Bearer [REDACTED]"
    with pytest.raises(ValueError, match="NOPE"):
        ring.resolve("x", "${NOPE}", None)
