"""Judge through any OpenAI-compatible chat-completions endpoint (async, bounded, retrying).

Retries 429, 5xx, timeouts, connection errors and unreadable bodies with exponential backoff and
jitter, honouring ``Retry-After``. Asks for JSON-schema output, and falls back to JSON mode, then to
plain text, if the server rejects the response format. The API key comes from the environment
variable named in the config and is never logged or stored.

Before its first pass the engine makes one :func:`preflight` request (``GET /models``), so a closed
port, a missing or rejected key, or a model the endpoint does not serve stops the pass at once with
the cause, instead of after every request has used up its retries.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from typing import TYPE_CHECKING, Any

from crawler.base import InputError
from crawler.retry import retry_after
from judge.config import JudgeConfig, OpenAIConfig
from judge.engines.base import Completion, Prompt
from judge.engines.llm import LLMEngine

if TYPE_CHECKING:  # httpx costs ~0.1 s to import: loaded when a request is made, not for `--help`
    import httpx

log = logging.getLogger(__name__)
_FORMATS = ("json_schema", "json_object", "none")


class EndpointUnavailable(InputError):
    """The judge endpoint cannot serve this config (unreachable, key missing or refused, unknown model).

    An :class:`InputError` of the ``judge.openai`` settings, so every command prints it as one line.
    """

    def __init__(self, message: str):
        super().__init__("judge.openai", message)


def preflight(settings: OpenAIConfig, timeout_s: float = 10.0) -> None:
    """One ``GET {base_url}/models``: the endpoint is reachable, accepts the key, and serves the model.

    An endpoint without a model list (404, 405, 501) passes once it answered at all.

    Raises:
        EndpointUnavailable: naming the endpoint, the cause and the setting that fixes it.
    """
    import httpx

    base = settings.base_url.rstrip("/")
    key = os.environ.get(settings.api_key_env)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(f"{base}/models", headers=headers, timeout=min(timeout_s, settings.timeout_s))
    except httpx.HTTPError as exc:
        raise EndpointUnavailable(
            f"judge endpoint {base} is unreachable ({type(exc).__name__}: {exc}); start the server or set "
            "judge.openai.base_url"
        ) from None
    if response.status_code in (401, 403):
        cause = (
            f"${settings.api_key_env} is not set"
            if not key
            else f"the key in ${settings.api_key_env} was refused"
        )
        raise EndpointUnavailable(
            f"judge endpoint {base} answered HTTP {response.status_code}: {cause} "
            "(judge.openai.api_key_env names the variable)"
        )
    if response.status_code in (404, 405, 501):
        return
    if response.status_code >= 400:
        raise EndpointUnavailable(
            f"judge endpoint {base} answered HTTP {response.status_code}: {response.text[:200]}"
        )
    try:
        served = [entry["id"] for entry in response.json()["data"]]
    except (ValueError, KeyError, TypeError):
        return
    if served and settings.model not in served:
        raise EndpointUnavailable(
            f"judge endpoint {base} does not serve model {settings.model!r} (it serves "
            f"{', '.join(served[:10])}); set judge.openai.model"
        )


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


class OpenAIEngine(LLMEngine):
    """Chat completions over HTTP with bounded concurrency."""

    name = "openai"

    def __init__(self, config: JudgeConfig):
        super().__init__(config)
        self.settings = config.openai
        self._format = self.settings.response_format
        self._checked = False

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.settings.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _body(self, prompt: Prompt) -> dict[str, Any]:
        s = self.config.sampling
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": prompt.messages,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
            "seed": s.seed,
            **self.settings.extra_body,
        }
        if self._format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "stage_scores", "schema": prompt.json_schema, "strict": True},
            }
        elif self._format == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    async def _once(self, client: httpx.AsyncClient, prompt: Prompt) -> Completion:
        import httpx

        start = time.perf_counter()
        try:
            response = await client.post("/chat/completions", json=self._body(prompt))
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise _Retryable(f"{type(exc).__name__}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code}", retry_after(response.headers.get("retry-after")))
        if response.status_code == 400 and "response_format" in response.text and self._format != "none":
            self._format = _FORMATS[_FORMATS.index(self._format) + 1]
            log.warning("endpoint rejected the response format; falling back to %s", self._format)
            raise _Retryable("response_format rejected", 0.0)
        if response.status_code >= 400:
            return Completion(prompt.key, None, error=f"HTTP {response.status_code}: {response.text[:300]}")
        try:
            payload = response.json()
            text = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise _Retryable(f"unreadable response body ({type(exc).__name__})") from exc
        usage = payload.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return Completion(
            prompt.key,
            text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            cached_prompt_tokens=int(details.get("cached_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=time.perf_counter() - start,
        )

    async def _with_retries(
        self, client: httpx.AsyncClient, gate: asyncio.Semaphore, prompt: Prompt
    ) -> Completion:
        s = self.settings
        reason = ""
        for attempt in range(s.max_retries + 1):
            async with gate:
                try:
                    return await self._once(client, prompt)
                except _Retryable as exc:
                    reason = str(exc)
                    wait = exc.retry_after
            if attempt == s.max_retries:
                break
            if wait is None:
                wait = s.backoff_base_s * (2**attempt) * (0.5 + random.random() / 2)
            await asyncio.sleep(min(wait, s.backoff_max_s))
        return Completion(prompt.key, None, error=f"gave up after {s.max_retries + 1} attempts: {reason}")

    async def _run(self, prompts: list[Prompt]) -> list[Completion]:
        import httpx

        gate = asyncio.Semaphore(self.settings.concurrency)
        limits = httpx.Limits(max_connections=self.settings.concurrency)
        async with httpx.AsyncClient(
            base_url=self.settings.base_url.rstrip("/"),
            headers=self._headers(),
            timeout=httpx.Timeout(self.settings.timeout_s),
            limits=limits,
        ) as client:
            return list(await asyncio.gather(*(self._with_retries(client, gate, p) for p in prompts)))

    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        if not prompts:
            return []
        if not self._checked:  # the first pass of this engine
            preflight(self.settings)
            self._checked = True
        return asyncio.run(self._run(prompts))
