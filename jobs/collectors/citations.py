"""Answer text and cited URLs out of a Chat Completions or Responses API response body.

Cited URLs come from the best evidence the response carries, in this order of preference:

1. ``url_citation`` annotations — Chat: ``choices[0].message.annotations[].url_citation.url``;
   Responses: ``output[type=message].content[type=output_text].annotations[type=url_citation].url``;
2. search-tool results — Responses: ``output[type=web_search_call].action.sources[].url`` (and the
   ``url`` of ``open_page`` actions); providers that return results beside the answer
   (top-level ``search_results[].url`` or ``citations[]``);
3. links written in the answer text (Markdown links first, then bare http(s) URLs).

The first tier that yields any URL wins; URLs keep their first-seen order, duplicates dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

#: Values of ``citation_source`` in the answers table.
CITATION_SOURCES = ("annotations", "search_results", "answer_text", "none")

_MARKDOWN_LINK = re.compile(
    r"\[[^\]\n]*\]\(\s*<?(https?://(?:[^()\s<>]|\([^()\s<>]*\))+)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_BARE_URL = re.compile(r"https?://[^\s<>\"'`\]\[{}|\\^]+")
_TRAILING = ".,;:!?'\"»”’…*_"


@dataclass
class ParsedAnswer:
    """What one response says: the answer text, its cited URLs and where they were found."""

    text: str | None
    urls: list[str] = field(default_factory=list)
    citation_source: str = "none"
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


def is_web_url(url: Any) -> bool:
    if not isinstance(url, str):
        return False
    parts = urlsplit(url.strip())
    return parts.scheme.lower() in {"http", "https"} and bool(parts.netloc)


def unique_urls(urls: list[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for url in urls:
        if is_web_url(url):
            seen.setdefault(url.strip(), None)
    return list(seen)


def trim_bare_url(url: str) -> str:
    """Drop sentence punctuation after a bare URL, and a closing bracket that has no opening one."""
    while url and url[-1] in _TRAILING:
        url = url[:-1]
    while url.endswith(")") and url.count(")") > url.count("("):
        url = url[:-1].rstrip(_TRAILING)
    return url


def links_in_text(text: str | None) -> list[str]:
    """URLs written in an answer: Markdown link targets first, then bare URLs, in order."""
    if not text:
        return []
    links = _MARKDOWN_LINK.findall(text)
    stripped = _MARKDOWN_LINK.sub(" ", text)
    links += [trim_bare_url(u) for u in _BARE_URL.findall(stripped)]
    return unique_urls(links)


def _content_text(content: Any) -> str | None:
    """Chat ``message.content`` as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def _provider_search_results(raw: dict[str, Any]) -> list[Any]:
    results = [r.get("url") for r in raw.get("search_results") or [] if isinstance(r, dict)]
    results += [c if isinstance(c, str) else (c or {}).get("url") for c in raw.get("citations") or []]
    return results


def parse_chat_completion(raw: dict[str, Any]) -> ParsedAnswer:
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("chat completion without choices[0]")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError("chat completion without choices[0].message")
    text = _content_text(message.get("content"))
    annotated = []
    for note in message.get("annotations") or []:
        if isinstance(note, dict) and note.get("type") == "url_citation":
            inner = note.get("url_citation")
            annotated.append(inner.get("url") if isinstance(inner, dict) else note.get("url"))
    return choose(
        text,
        unique_urls(annotated),
        unique_urls(_provider_search_results(raw)),
        finish_reason=choices[0].get("finish_reason"),
        usage=raw.get("usage"),
    )


def parse_response(raw: dict[str, Any]) -> ParsedAnswer:
    """A Responses API body (``object: "response"``)."""
    output = raw.get("output")
    if not isinstance(output, list):
        raise ValueError("response without an output list")
    texts, annotated, searched = [], [], []
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(part.get("text") or "")
                    annotated += [
                        a.get("url")
                        for a in part.get("annotations") or []
                        if isinstance(a, dict) and a.get("type") == "url_citation"
                    ]
        elif item.get("type") == "web_search_call":
            action = item.get("action") or {}
            searched += [s.get("url") for s in action.get("sources") or [] if isinstance(s, dict)]
            if action.get("type") == "open_page":
                searched.append(action.get("url"))
    searched += _provider_search_results(raw)
    incomplete = raw.get("incomplete_details") or {}
    finish = incomplete.get("reason") if isinstance(incomplete, dict) and incomplete else raw.get("status")
    return choose(
        "".join(texts) if texts else None,
        unique_urls(annotated),
        unique_urls(searched),
        finish_reason=finish,
        usage=raw.get("usage"),
    )


def choose(
    text: str | None, annotated: list[str], searched: list[str], *, finish_reason: Any, usage: Any
) -> ParsedAnswer:
    """Apply the order of preference: annotations, then search results, then links in the text."""
    if annotated:
        urls, source = annotated, "annotations"
    elif searched:
        urls, source = searched, "search_results"
    else:
        urls = links_in_text(text)
        source = "answer_text" if urls else "none"
    return ParsedAnswer(
        text=text,
        urls=urls,
        citation_source=source,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=usage if isinstance(usage, dict) else None,
    )


def parse_answer(raw: dict[str, Any], api: str) -> ParsedAnswer:
    """Dispatch on the API ('chat' or 'responses').

    Raises:
        ValueError: The body does not have the shape of that API's response.
    """
    if api == "responses":
        return parse_response(raw)
    return parse_chat_completion(raw)
