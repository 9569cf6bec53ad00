"""A loopback OpenAI-compatible server that misbehaves on purpose, for the openai engine's tests.

Each distinct request (by its first user message) gets a fate from its hash:
``rate_limit`` (429 + Retry-After, then fine), ``server_error`` (500 twice, then fine), ``timeout``
(first attempt stalls past the client timeout), ``garbage`` (a body that is not JSON, then fine),
``bad_then_good`` (invalid JSON answer, valid after the repair request), ``always_bad`` (invalid
JSON answer every time: must end ``unscorable``), and ``ok``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FATES = ("rate_limit", "server_error", "timeout", "garbage", "bad_then_good", "always_bad", "ok")


def fate_of(first_user_message: str) -> str:
    return FATES[int(hashlib.sha256(first_user_message.encode()).hexdigest(), 16) % len(FATES)]


def _answer(schema: dict | None, messages: list[dict]) -> str:
    keys = (schema or {}).get("required") or ["semantic_relevance", "factual_accuracy", "objectivity_tone"]
    return json.dumps({k: {"justification": "fault-server answer", "score": 3} for k in keys})


class FaultServer:
    """Start with ``start()``; ``url`` is the /v1 base; ``attempts`` counts requests per fate."""

    def __init__(self, stall_s: float = 2.0):
        self.stall_s = stall_s
        self.attempts: Counter[str] = Counter()
        self.seen: Counter[str] = Counter()
        self.auth_headers: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except BrokenPipeError:  # the client gave up (timeout): expected for the "timeout" fate
                    pass

            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.auth_headers.append(self.headers.get("Authorization", ""))
                messages = payload["messages"]
                first_user = next(m["content"] for m in messages if m["role"] == "user")
                fate = fate_of(first_user)
                is_repair = sum(1 for m in messages if m["role"] == "user") > 1
                with server.lock:
                    server.seen[first_user] += 1
                    attempt = server.seen[first_user]
                    server.attempts[fate] += 1
                schema = ((payload.get("response_format") or {}).get("json_schema") or {}).get("schema")
                content = _answer(schema, messages)
                if fate == "rate_limit" and attempt == 1:
                    return self._send(429, b'{"error": "slow down"}', {"Retry-After": "0.2"})
                if fate == "server_error" and attempt <= 2:
                    return self._send(500, b'{"error": "boom"}')
                if fate == "timeout" and attempt == 1:
                    time.sleep(server.stall_s)
                    return self._send(504, b"{}")
                if fate == "garbage" and attempt == 1:
                    return self._send(200, b"<html>proxy error</html>")
                if fate == "always_bad" or (fate == "bad_then_good" and not is_repair):
                    content = '{"semantic_relevance": {"score": "excellent"'  # broken and out of range
                usage = {
                    "prompt_tokens": 100,
                    "completion_tokens": 20,
                    "prompt_tokens_details": {"cached_tokens": 64},
                }
                body = {"choices": [{"message": {"role": "assistant", "content": content}}], "usage": usage}
                return self._send(200, json.dumps(body).encode())

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
