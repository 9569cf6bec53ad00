"""One OpenAI-compatible endpoint: build the request, send it with retries, classify the outcome.

Retried: HTTP 408, 409, 429, 5xx, timeouts and connection errors. A 429 (or 503) waits for the
server's ``Retry-After`` (seconds or an HTTP date; OpenAI's ``retry-after-ms`` too), other retries
back off exponentially with jitter. Anything else (400, 401, 404...) fails at once. Every outcome is
a :class:`CallResult`; nothing raises for a failed query.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx

from crawler.retry import retry_after
from jobs.collectors.keys import KeyRing
from jobs.collectors.systems import EndpointSystem

#: Values of ``status`` in the answers table (a SERP row is always "ok").
ANSWER_STATUSES = ("ok", "timeout", "rate_limited", "http_error", "connection_error", "bad_response")
RETRYABLE_HTTP = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Longest error text kept from a failed response body.
MAX_ERROR_CHARS = 2000


@dataclass
class CallResult:
    """The outcome of one query to one endpoint, after retries."""

    status: str
    attempts: int
    elapsed_s: float
    latency_s: float | None = None
    http_status: int | None = None
    body: dict[str, Any] | None = None
    error: str | None = None


class Pacer:
    """Spaces the starts of requests to one endpoint at least ``60 / per_minute`` seconds apart.

    Args:
        per_minute: The endpoint's request quota; None means no pacing.
    """

    def __init__(self, per_minute: float | None):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.next_at = 0.0
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self.lock:
            now = time.monotonic()
            delay = self.next_at - now
            self.next_at = max(now, self.next_at) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


def request_body(system: EndpointSystem, query_text: str) -> tuple[str, dict[str, Any]]:
    """The path (relative to ``api_base``) and JSON body of one query."""
    tool = system.web_search_mode == "tool"
    if system.api == "responses":
        body: dict[str, Any] = {"model": system.model_name, "input": query_text}
        if system.system_prompt:
            body["instructions"] = system.system_prompt
        if tool:
            body["tools"] = [system.web_search_tool]
            body["include"] = ["web_search_call.action.sources"]
        return "/responses", {**body, **system.generation_config}
    messages = [{"role": "user", "content": query_text}]
    if system.system_prompt:
        messages.insert(0, {"role": "system", "content": system.system_prompt})
    body = {"model": system.model_name, "messages": messages}
    if tool:
        body["web_search_options"] = {}
    return "/chat/completions", {**body, **system.generation_config}


class EndpointClient:
    """Sends queries to one system (the caller bounds how many are in flight per endpoint).

    Args:
        system: The system definition.
        api_key: The resolved key (None for endpoints without authentication).
        http: The shared HTTP client.
        keyring: Scrubs keys from error texts.
        pacer: The request pacer of the system's endpoint (shared with its other systems).
        rng: Jitter source for backoff waits.
    """

    def __init__(
        self,
        system: EndpointSystem,
        api_key: str | None,
        http: httpx.AsyncClient,
        keyring: KeyRing,
        pacer: Pacer | None = None,
        rng: random.Random | None = None,
    ):
        self.system, self.http, self.keyring = system, http, keyring
        self.pacer = pacer or Pacer(None)
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.rng = rng or random.Random()

    def backoff(self, attempt: int) -> float:
        policy = self.system.policy
        ceiling = min(policy.backoff_max_s, policy.backoff_base_s * 2 ** (attempt - 1))
        return ceiling * (0.5 + 0.5 * self.rng.random())

    async def ask(self, query_text: str) -> CallResult:
        """Send one query, retrying what is worth retrying; never raises for a failed call."""
        policy = self.system.policy
        path, body = request_body(self.system, query_text)
        url = self.system.api_base + path
        timeout = httpx.Timeout(policy.timeout_s)
        start = time.monotonic()
        result = CallResult(status="connection_error", attempts=0, elapsed_s=0.0)
        for attempt in range(1, policy.max_attempts + 1):
            wait: float | None = None
            await self.pacer.wait()
            sent = time.monotonic()
            try:
                async with asyncio.timeout(policy.timeout_s):  # a total deadline, not per read
                    response = await self.http.post(url, json=body, headers=self.headers, timeout=timeout)
            except (httpx.TimeoutException, TimeoutError) as exc:
                error = f"timed out after {policy.timeout_s}s ({type(exc).__name__})"
                result = self.failure("timeout", attempt, start, error)
            except httpx.HTTPError as exc:
                result = self.failure("connection_error", attempt, start, f"{type(exc).__name__}: {exc}")
            else:
                result = self.classify(response, attempt, start, time.monotonic() - sent)
                if response.status_code in (429, 503):
                    wait = retry_after(
                        response.headers.get("retry-after"), millis=response.headers.get("retry-after-ms")
                    )
                if result.status == "http_error" and response.status_code not in RETRYABLE_HTTP:
                    return result
            if result.status in ("ok", "bad_response") or attempt == policy.max_attempts:
                return result
            wait = self.backoff(attempt) if wait is None else min(wait, policy.max_retry_after_s)
            await asyncio.sleep(wait)
        return result

    def failure(self, status: str, attempt: int, start: float, error: str, **extra: Any) -> CallResult:
        return CallResult(
            status=status,
            attempts=attempt,
            elapsed_s=time.monotonic() - start,
            error=self.keyring.redact(error),
            **extra,
        )

    def classify(self, response: httpx.Response, attempt: int, start: float, latency: float) -> CallResult:
        code = response.status_code
        if code == 429:
            return self.failure(
                "rate_limited", attempt, start, _error_text(response), http_status=code, latency_s=latency
            )
        if code >= 400:
            return self.failure(
                "http_error", attempt, start, _error_text(response), http_status=code, latency_s=latency
            )
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self.failure(
                "bad_response",
                attempt,
                start,
                "response body is not JSON: " + response.text[:200],
                http_status=code,
                latency_s=latency,
            )
        if not isinstance(body, dict):
            return self.failure(
                "bad_response",
                attempt,
                start,
                "response body is not a JSON object",
                http_status=code,
                latency_s=latency,
            )
        return CallResult(
            status="ok",
            attempts=attempt,
            elapsed_s=time.monotonic() - start,
            latency_s=latency,
            http_status=code,
            body=body,
        )


def _error_text(response: httpx.Response) -> str:
    text = response.text.strip()
    return f"HTTP {response.status_code}: {text[:MAX_ERROR_CHARS]}"
