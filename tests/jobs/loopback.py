"""Loopback servers for audit tests: a small web of article pages, and an OpenAI-compatible judge.

Both are real HTTP servers on 127.0.0.1 that count what they serve, so tests check what reached
them (a refetch, a retried judgment), not what the client says it did.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOPICS = ("volcanoes", "tides", "glaciers", "comets", "coral reefs", "monsoons", "earthquakes", "auroras")


def article(number: int) -> bytes:
    """A dated article page with a named author and enough text to be judged."""
    topic = TOPICS[number % len(TOPICS)]
    body = " ".join(
        f"Researchers who study {topic} explain in paragraph {i} how {topic} form, how they are measured, "
        f"and what the long-term records of {topic} show about the region."
        for i in range(12)
    )
    return (
        f"<!doctype html><html lang='en'><head><title>All about {topic} ({number})</title>"
        f"<meta name='author' content='Dana Reyes'>"
        f"<meta property='article:published_time' content='2025-0{1 + number % 9}-15'></head>"
        f"<body><article><h1>All about {topic}</h1><p>By Dana Reyes, staff writer</p>"
        f"<p>{body}</p></article><a href='/about'>About us</a></body></html>"
    ).encode()


class LoopbackWeb:
    """``/page/<n>`` serves article n after ``delay_s``, anything else 404; ``hits`` counts requests."""

    def __init__(self, host: str = "127.0.0.1", delay_s: float = 0.0):
        self.hits: Counter[str] = Counter()
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                web.hits[self.path] += 1
                if self.path.startswith("/page/") and self.path[6:].isdigit():
                    time.sleep(delay_s)
                    body, code = article(int(self.path[6:])), 200
                elif self.path == "/robots.txt":
                    body, code = b"User-agent: *\nAllow: /\n", 200
                else:
                    body, code = b"<html><body>not here</body></html>", 404
                self.send_response(code)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.base = f"http://{host}:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class OpenAIJudge:
    """An OpenAI-compatible chat endpoint that scores every requested dimension 4, on a given port.

    ``GET /v1/models`` lists ``model``; with ``failing`` set, chat requests answer 500 (a judge
    outage after a good start); with ``key`` set, a request without that bearer key gets 401.
    ``chats`` counts chat requests.
    """

    def __init__(
        self, port: int = 0, model: str = "loopback-judge", failing: bool = False, key: str | None = None
    ):
        self.model, self.failing, self.key, self.chats = model, failing, key, 0
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if judge.key and self.headers.get("Authorization") != f"Bearer {judge.key}":
                    self._send(401, {"error": "invalid api key"})
                elif self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": judge.model, "object": "model"}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                judge.chats += 1
                if judge.failing:
                    self._send(500, {"error": "judge outage"})
                    return
                schema = (request.get("response_format") or {}).get("json_schema", {}).get("schema", {})
                answer = {
                    key: {"score": 4, "justification": "loopback"} for key in schema.get("required", [])
                }
                message = {"role": "assistant", "content": json.dumps(answer)}
                usage = {"prompt_tokens": 100, "completion_tokens": 20}
                self._send(200, {"choices": [{"message": message}], "usage": usage})

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
