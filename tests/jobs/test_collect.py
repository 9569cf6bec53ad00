"""`sourcebench collect` against a scripted loopback server that answers with recorded response shapes.

The shapes follow the OpenAI API reference: Chat Completions ``message.annotations[].url_citation``
(search-preview models) and Responses API ``output[]`` items (``web_search_call`` with
``action.sources``, ``message`` with ``output_text`` annotations). Each scenario lives under its own
path prefix: ``http://127.0.0.1:<port>/<scenario>/v1``.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pytest

from crawler.errors import InputError
from crawler.storage import RunStore
from jobs.cli import main
from jobs.collectors import ANSWERS_SCHEMA, KeyRing, Pacer, Sweep, load_systems
from jobs.inputs import load_citations, load_queries
from jobs.schemas import CITATIONS_SCHEMA
from tests.conftest import free_port

SECRET = "sk-test-Zq8vN3xR7uP2mL5k"
REPO = Path(__file__).resolve().parents[2]


def archived_urls() -> list[str]:
    """URLs of the pages in the bundled demo archive: what the scripted engines cite, so that the audit
    can replay every cited page offline."""
    with open(REPO / "jobs/demo/pages.csv", newline="") as handle:
        return [row["url"] for row in csv.DictReader(handle) if row["http_status"] == "200"]


def chat_completion(content: str, annotations: list[dict] | None = None) -> dict:
    return {
        "id": "chatcmpl-BR7bXfJ2zk8mW3rQ",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-search-preview-2025-03-11",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": None,
                    "annotations": annotations or [],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 240,
            "total_tokens": 252,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": None,
    }


def url_citation(text: str, url: str, title: str) -> dict:
    start = max(0, text.find(title))
    return {
        "type": "url_citation",
        "url_citation": {"start_index": start, "end_index": start + len(title), "title": title, "url": url},
    }


def response_object(
    text: str, annotations: list[dict], search_sources: list[str], opened: str | None
) -> dict:
    output: list[dict] = [
        {
            "type": "web_search_call",
            "id": "ws_67c9fa0502748190b7dd390736892e100be649c1a5ff9609",
            "status": "completed",
            "action": {
                "type": "search",
                "query": "q",
                "queries": ["q"],
                "sources": [{"type": "url", "url": u} for u in search_sources],
            },
        }
    ]
    if opened:
        output.append(
            {
                "type": "web_search_call",
                "id": "ws_2",
                "status": "completed",
                "action": {"type": "open_page", "url": opened},
            }
        )
    output.append(
        {
            "id": "msg_67c9fa077e288190af08fdffda2e34f20be649c1a5ff9609",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": annotations, "logprobs": []}],
        }
    )
    return {
        "id": "resp_67c9fa0502748190b7dd390736892e100be649c1a5ff9609",
        "object": "response",
        "created_at": 1741486325,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5-2025-08-07",
        "output": output,
        "tools": [{"type": "web_search"}],
        "usage": {
            "input_tokens": 328,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 356,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 684,
        },
    }


class Listener(ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog of 5 refuses connections under concurrent load


class ScriptedServer:
    """Loopback HTTP server; the first path segment picks the scenario."""

    def __init__(self, cited_pool: list[str]):
        self.pool = cited_pool
        self.requests: list[dict] = []
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter()
        self.seen: Counter[tuple[str, str]] = Counter()
        self.fail = True
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                scenario = self.path.split("/")[1]
                with server.lock:
                    server.requests.append(
                        {
                            "scenario": scenario,
                            "path": self.path,
                            "body": body,
                            "auth": self.headers.get("Authorization"),
                            "t": time.monotonic(),
                        }
                    )
                    server.in_flight[scenario] += 1
                    server.max_in_flight[scenario] = max(
                        server.max_in_flight[scenario], server.in_flight[scenario]
                    )
                try:
                    code, payload, headers = server.answer(scenario, self.path, body, self.headers)
                    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                    self.send_response(code)
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with server.lock:
                        server.in_flight[scenario] -= 1

        self.port = free_port()
        self.httpd = Listener(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def base(self, scenario: str) -> str:
        return f"http://127.0.0.1:{self.port}/{scenario}/v1"

    def urls_for(self, text: str, n: int = 3) -> list[str]:
        start = int(hashlib.sha1(text.encode()).hexdigest(), 16) % len(self.pool)
        return [self.pool[(start + i) % len(self.pool)] for i in range(n)]

    def query_of(self, body: dict) -> str:
        if "messages" in body:
            return body["messages"][-1]["content"]
        return body["input"]

    def answer(self, scenario: str, path: str, body: dict, headers) -> tuple[int, object, dict]:
        query = self.query_of(body)
        with self.lock:
            self.seen[(scenario, query)] += 1
            nth = self.seen[(scenario, query)]
        urls = self.urls_for(query)
        if scenario == "annot":
            text = f"Here is what I found. See [Decoy](https://decoy.example.org/x) and {urls[0]}."
            notes = [url_citation(text, u, f"Source {i}") for i, u in enumerate(urls)]
            return 200, chat_completion(text, notes), {}
        if scenario == "search":
            return 200, response_object("An answer without inline citations.", [], urls[:2], urls[2]), {}
        if scenario == "resp_annot":
            notes = [{"type": "url_citation", "start_index": 0, "end_index": 5, "url": urls[2], "title": "t"}]
            return 200, response_object("Cited answer.", notes, urls[:2], None), {}
        if scenario == "text":
            text = f"Read [the article]({urls[0]}) (also {urls[1]}), and {urls[2]}."
            return 200, chat_completion(text), {}
        if scenario == "ratelimit":
            if nth == 1:
                return (
                    429,
                    {"error": {"message": "Rate limit reached", "type": "requests"}},
                    {"Retry-After": "1"},
                )
            return 200, chat_completion(f"ok {urls[0]}"), {}
        if scenario == "ratelimit_always":
            return 429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0"}
        if scenario == "flaky":
            if nth == 1:
                return 500, {"error": {"message": "upstream error"}}, {}
            return 200, chat_completion("fine"), {}
        if scenario == "slow":
            time.sleep(2.0)
            return 200, chat_completion("too late"), {}
        if scenario == "bad_request":
            return 400, {"error": {"message": "Unsupported parameter: 'foo'"}}, {}
        if scenario == "not_json":
            return 200, b"<html>gateway</html>", {"Content-Type": "text/html"}
        if scenario == "busy":
            time.sleep(0.5)  # long enough for both workers to overlap on a loaded machine
            return 200, chat_completion("done"), {}
        if scenario == "toggle":
            if self.fail:
                return 503, {"error": {"message": "overloaded"}}, {}
            return 200, chat_completion(f"now {urls[0]}"), {}
        if scenario == "echo":
            auth = headers.get("Authorization", "")
            if "laptop" in query:
                return 401, {"error": {"message": f"Incorrect API key provided: {auth}"}}, {}
            return 200, chat_completion(f"your header was {auth} and key {auth.removeprefix('Bearer ')}"), {}
        return 404, {"error": {"message": f"unknown scenario {scenario}"}}, {}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server():
    srv = ScriptedServer(archived_urls())
    yield srv
    srv.close()


@pytest.fixture
def queries_csv(tmp_path: Path, shared_data: Path) -> Path:
    """The first six public queries (VACOS), as a CSV."""
    lines = (shared_data / "sourcebench/sourcebench_public_queries_v1.csv").read_text().splitlines()
    path = tmp_path / "queries.csv"
    path.write_text("\n".join(lines[:7]) + "\n")
    return path


def write_systems(tmp_path: Path, systems: list[dict]) -> Path:
    path = tmp_path / "systems.json"
    path.write_text(json.dumps({"systems": systems}))
    return path


def system(server: ScriptedServer, scenario: str, **extra) -> dict:
    return {"name": scenario, "model_name": "m", "api_base": server.base(scenario), **extra}


def collect(*args: str) -> int:
    return main(["collect", *map(str, args)])


def answers_of(out: Path) -> list[dict]:
    return RunStore(str(out)).read_table("answers", schema=ANSWERS_SCHEMA).to_pylist()


def test_chat_annotations_win_over_links_in_text(server, tmp_path, queries_csv):
    systems = write_systems(tmp_path, [system(server, "annot", generation_config={"temperature": 0})])
    assert (
        collect("--queries", queries_csv, "--language", "en", "--systems", systems, "--out", tmp_path / "run")
        == 0
    )
    citations = load_citations(str(tmp_path / "run/citations.parquet"))
    assert citations.schema.equals(CITATIONS_SCHEMA)
    assert citations.num_rows == 6 * 3
    row = [r for r in citations.to_pylist() if r["query_id"] == "0"]
    query = load_queries(str(queries_csv)).to_pylist()[0]["query"]
    assert [r["url"] for r in row] == server.urls_for(query)
    assert [r["rank"] for r in row] == [1, 2, 3]
    assert "decoy.example.org" not in json.dumps(citations.column("url").to_pylist())
    assert row[0]["answer_text"].startswith("Here is what I found") and row[0]["language"] == "en"
    answers = answers_of(tmp_path / "run")
    assert {a["citation_source"] for a in answers} == {"annotations"}
    assert {(a["prompt_tokens"], a["completion_tokens"], a["total_tokens"]) for a in answers} == {
        (12, 240, 252)
    }
    assert all(a["latency_s"] > 0 and a["attempts"] == 1 and a["finish_reason"] == "stop" for a in answers)
    sent = [r for r in server.requests if r["scenario"] == "annot"][-1]["body"]
    assert sent["temperature"] == 0 and sent["messages"][-1]["role"] == "user"


def test_responses_search_results_then_annotations(server, tmp_path, queries_csv):
    systems = write_systems(
        tmp_path,
        [
            system(server, "search", api="responses", web_search_mode="tool", system_prompt="Cite sources."),
            system(server, "resp_annot", api="responses"),
        ],
    )
    assert collect("--queries", queries_csv, "--systems", systems, "--out", tmp_path / "run") == 0
    citations = load_citations(str(tmp_path / "run/citations.parquet")).to_pylist()
    query = load_queries(str(queries_csv)).to_pylist()[0]["query"]
    urls = server.urls_for(query)
    by_system = defaultdict(list)
    for row in citations:
        if row["query_id"] == "0":
            by_system[row["system"]].append(row["url"])
    assert by_system["search"] == urls  # two action.sources, then the open_page URL
    assert by_system["resp_annot"] == [urls[2]]  # annotations beat the search sources
    sources = {(a["system"], a["citation_source"]) for a in answers_of(tmp_path / "run")}
    assert sources == {("search", "search_results"), ("resp_annot", "annotations")}
    body = [r for r in server.requests if r["scenario"] == "search"][-1]["body"]
    assert body["tools"] == [{"type": "web_search"}] and body["include"] == ["web_search_call.action.sources"]
    assert body["instructions"] == "Cite sources." and body["input"]
    total = {a["total_tokens"] for a in answers_of(tmp_path / "run")}
    assert total == {684}


def test_links_in_answer_text_are_the_last_resort(server, tmp_path, queries_csv):
    systems = write_systems(tmp_path, [system(server, "text")])
    assert collect("--queries", queries_csv, "--systems", systems, "--out", tmp_path / "run") == 0
    citations = load_citations(str(tmp_path / "run/citations.parquet")).to_pylist()
    query = load_queries(str(queries_csv)).to_pylist()[0]["query"]
    assert [r["url"] for r in citations if r["query_id"] == "0"] == server.urls_for(query)
    assert {a["citation_source"] for a in answers_of(tmp_path / "run")} == {"answer_text"}


def test_429_waits_for_retry_after_then_succeeds(server, tmp_path, queries_csv):
    systems = write_systems(tmp_path, [system(server, "ratelimit")])
    assert collect("--queries", queries_csv, "--systems", systems, "--out", tmp_path / "run") == 0
    answers = answers_of(tmp_path / "run")
    assert {a["status"] for a in answers} == {"ok"} and {a["attempts"] for a in answers} == {2}
    assert all(a["elapsed_s"] >= 1.0 for a in answers)
    times = defaultdict(list)
    for r in server.requests:
        if r["scenario"] == "ratelimit":
            times[server.query_of(r["body"])].append(r["t"])
    assert all(len(t) == 2 and t[1] - t[0] >= 0.99 for t in times.values())


def test_failures_become_status_rows(server, tmp_path, queries_csv):
    systems = write_systems(
        tmp_path,
        [
            system(server, "ratelimit_always", policy={"max_attempts": 3}),
            system(server, "slow", policy={"timeout_s": 0.3, "max_attempts": 2, "backoff_base_s": 0}),
            system(server, "flaky", policy={"backoff_base_s": 0.05}),
            system(server, "bad_request"),
            system(server, "not_json"),
        ],
    )
    assert collect("--queries", queries_csv, "--systems", systems, "--out", tmp_path / "run") == 0
    answers = answers_of(tmp_path / "run")
    assert len(answers) == 5 * 6  # one row per (system, query), failed or not
    outcome = {(a["system"], a["status"], a["attempts"], a["http_status"]) for a in answers}
    assert outcome == {
        ("ratelimit_always", "rate_limited", 3, 429),
        ("slow", "timeout", 2, None),
        ("flaky", "ok", 2, 200),
        ("bad_request", "http_error", 1, 400),
        ("not_json", "bad_response", 1, 200),
    }
    assert all("Unsupported parameter" in a["error"] for a in answers if a["system"] == "bad_request")
    assert all(a["answer_text"] is None for a in answers if a["status"] != "ok")
    citations = load_citations(str(tmp_path / "run/citations.parquet"))
    assert set(citations["system"].to_pylist()) <= {"flaky"}
    manifest = json.loads((tmp_path / "run/collect/manifest.json").read_text())
    assert manifest["answers_by_system_status"]["slow"] == {"timeout": 6}


def test_concurrency_is_bounded_per_endpoint(server, tmp_path, queries_csv):
    systems = write_systems(tmp_path, [system(server, "busy", policy={"max_concurrency": 2})])
    assert collect("--queries", queries_csv, "--systems", systems, "--out", tmp_path / "run") == 0
    assert server.max_in_flight["busy"] == 2
    assert len(answers_of(tmp_path / "run")) == 6


def test_requests_per_minute_spaces_request_starts(server, tmp_path, queries_csv):
    async def starts() -> list[float]:
        pacer, times = Pacer(1200), []

        async def one() -> None:
            await pacer.wait()
            times.append(time.monotonic())

        await asyncio.gather(*(one() for _ in range(6)))
        return sorted(times)

    times = asyncio.run(starts())
    # the k-th start is never earlier than k intervals after the first (a late wake-up may follow)
    assert all(t - times[0] >= k * 0.05 - 0.001 for k, t in enumerate(times))
    systems = write_systems(tmp_path, [system(server, "text", policy={"requests_per_minute": 600})])
    before = len(server.requests)
    assert collect("--queries", queries_csv, "--systems", systems, "--out", tmp_path / "run") == 0
    arrived = sorted(r["t"] for r in server.requests[before:])
    assert len(arrived) == 6 and arrived[-1] - arrived[0] >= 0.4  # five gaps of 0.1 s, less arrival jitter


def test_rerun_resumes_without_duplicates(server, tmp_path, queries_csv):
    systems = write_systems(tmp_path, [system(server, "annot")])
    out = tmp_path / "run"
    lines = queries_csv.read_text().splitlines()
    first = tmp_path / "first.csv"
    first.write_text("\n".join(lines[:4]) + "\n")
    before = len(server.requests)
    assert collect("--queries", first, "--systems", systems, "--out", out, "--chunk-size", 2) == 0
    assert len(server.requests) - before == 3
    # a crash between the two part writes leaves a part without a marker: it must not count
    orphan = pa.Table.from_pylist(
        [{"system": "annot", "query_id": "0", "url": "https://orphan.example/", "rank": 9}],
        schema=CITATIONS_SCHEMA,
    )
    RunStore(str(out)).write_table("citations/chunk-orphan.parquet", orphan)
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out, "--chunk-size", 2) == 0
    assert len(server.requests) - before == 6
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out) == 0
    assert len(server.requests) - before == 6  # nothing left to ask
    pairs = [(a["system"], a["query_id"]) for a in answers_of(out)]
    assert sorted(pairs) == sorted(set(pairs)) and len(pairs) == 6
    citations = load_citations(str(out / "citations.parquet"))
    assert citations.num_rows == 18 and "https://orphan.example/" not in citations["url"].to_pylist()
    assert not (out / "citations/chunk-orphan.parquet").exists()
    assert load_queries(str(out / "queries.csv")).num_rows == 6


def test_retry_failed_replaces_the_failed_row(server, tmp_path, queries_csv):
    systems = write_systems(tmp_path, [system(server, "toggle", policy={"max_attempts": 1})])
    out = tmp_path / "run"
    server.fail = True
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out) == 0
    assert {a["status"] for a in answers_of(out)} == {"http_error"}
    server.fail = False
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out) == 0
    assert {a["status"] for a in answers_of(out)} == {"http_error"}  # a plain rerun keeps failures
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out, "--retry-failed") == 0
    answers = answers_of(out)
    assert len(answers) == 6 and {a["status"] for a in answers} == {"ok"}
    assert load_citations(str(out / "citations.parquet")).num_rows == 6


def test_api_key_is_sent_but_never_written_or_logged(server, tmp_path, queries_csv, capsys, caplog):
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text(f"echo: {SECRET}\n")
    systems = write_systems(tmp_path, [system(server, "echo")])
    out = tmp_path / "run"
    with caplog.at_level("DEBUG"):
        assert (
            collect("--queries", queries_csv, "--systems", systems, "--secrets", secrets, "--out", out) == 0
        )
    assert {r["auth"] for r in server.requests if r["scenario"] == "echo"} == {f"Bearer {SECRET}"}
    answers = answers_of(out)
    assert {a["status"] for a in answers} == {"ok", "http_error"}  # the server echoed the key in both
    assert any("[REDACTED]" in (a["error"] or a["answer_text"]) for a in answers)
    leaked = [p for p in out.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []
    manifest = json.loads((out / "collect/manifest.json").read_text())
    assert manifest["systems"][0]["api_key_source"] == "secrets file"
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err + caplog.text


def test_key_from_environment_reference(server, tmp_path, queries_csv, monkeypatch):
    monkeypatch.setenv("SB_TEST_KEY", SECRET)
    systems = write_systems(tmp_path, [system(server, "annot", api_key="env:SB_TEST_KEY")])
    out = tmp_path / "run"
    before = len(server.requests)
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out) == 0
    assert {r["auth"] for r in server.requests[before:]} == {f"Bearer {SECRET}"}
    assert not [p for p in out.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    monkeypatch.delenv("SB_TEST_KEY")
    assert collect("--queries", queries_csv, "--systems", systems, "--out", tmp_path / "r2") == 2


def test_yaml_config_with_command_line_overrides(server, tmp_path, queries_csv):
    systems = write_systems(tmp_path, [system(server, "annot")])
    config = tmp_path / "collect.yaml"
    config.write_text(
        f"queries: {queries_csv}\nsystems: [{systems}]\nlanguage: de\nout: {tmp_path / 'nowhere'}\n"
    )
    assert collect("--config", config, "--out", tmp_path / "run", "--sample-per-stratum", 2) == 0
    answers = answers_of(tmp_path / "run")
    assert len(answers) == 2 and {a["language"] for a in answers} == {"de"}
    assert not (tmp_path / "nowhere").exists()
    config.write_text(f"queries: {queries_csv}\nsystems: [{systems}]\nlanguages: [en, de]\n")
    assert collect("--config", config, "--out", tmp_path / "r2") == 2


def test_official_endpoint_submission_json_is_a_system(tmp_path):
    path = tmp_path / "submission.json"
    path.write_text(
        json.dumps(
            {
                "submission_mode": "endpoint",
                "submitter_name": "Example Researcher",
                "organization": "Example Lab",
                "contact_email": "researcher@example.com",
                "model_name": "example-model",
                "model_version": "2026-03",
                "api_base": "https://api.example.com/v1/",
                "api_key": "${EXAMPLE_KEY}",
                "api_format": "openai-compatible",
                "web_search_mode": "built-in-search",
                "generation_config": {"temperature": 0},
                "system_prompt": None,
                "notes": "n",
                "agrees_to_reproducibility_policy": True,
            }
        )
    )
    (sys_,) = load_systems(path)
    assert sys_.name == "example-model" and sys_.api_base == "https://api.example.com/v1"
    assert "api_key" not in sys_.public_view() and "EXAMPLE_KEY" not in repr(sys_)
    ring = KeyRing(environ={"EXAMPLE_KEY": SECRET})
    assert ring.resolve(sys_.name, sys_.api_key, sys_.api_key_env) == (SECRET, "env:EXAMPLE_KEY")


def test_bad_system_definition_names_file_record_and_field(tmp_path):
    path = write_systems(
        tmp_path,
        [
            {"model_name": "a", "api_base": "http://127.0.0.1:1/v1"},
            {"model_name": "b", "api_base": "ftp://x"},
        ],
    )
    with pytest.raises(InputError) as err:
        load_systems(path)
    assert err.value.source == str(path) and err.value.field == "systems[1].api_base"
    path.write_text(json.dumps([{"model_name": "a", "api_base": "http://h/v1", "temprature": 0}]))
    with pytest.raises(InputError, match="temprature"):
        load_systems(path)


def test_collect_into_s3_run_store(server, tmp_path, queries_csv, s3_bucket):
    systems = write_systems(tmp_path, [system(server, "annot")])
    out = f"s3://{s3_bucket}/sweeps/one"
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out) == 0
    citations = load_citations(f"{out}/citations.parquet")
    assert citations.num_rows == 18
    assert RunStore(out).read_table("answers", schema=ANSWERS_SCHEMA).num_rows == 6
    assert load_queries(f"{out}/queries.csv").num_rows == 6
    before = len(server.requests)
    assert collect("--queries", queries_csv, "--systems", systems, "--out", out) == 0
    assert len(server.requests) == before


def test_sweep_public_queries_in_three_languages(server, tmp_path, shared_data):
    """The shipped multilingual template (public queries + translations) -> a table the audit reads."""
    template = REPO / "jobs/collectors/templates/sourcebench_public_v1_multilingual.yaml"
    systems = write_systems(tmp_path, [system(server, "annot"), system(server, "search", api="responses")])
    out = tmp_path / "run"
    code = collect(
        "--template",
        template,
        "--languages",
        "en,de,fr",
        "--sample-per-stratum",
        "1",
        "--seed",
        "7",
        "--systems",
        systems,
        "--out",
        out,
    )
    assert code == 0
    queries = load_queries(str(out / "queries.csv"))
    assert queries.num_rows == 15  # 5 query types x 3 languages, one each
    assert Counter(queries["language"].to_pylist()) == {"en": 5, "de": 5, "fr": 5}
    citations = load_citations(str(out / "citations.parquet"))
    assert citations.schema.equals(CITATIONS_SCHEMA)
    assert set(citations["language"].to_pylist()) == {"en", "de", "fr"}
    assert set(citations["query_id"].to_pylist()) == set(queries["query_id"].to_pylist())
    assert set(citations["system"].to_pylist()) == {"annot", "search"}
    de = [r for r in citations.to_pylist() if r["language"] == "de"]
    assert all(r["query_id"].endswith("-de") for r in de)
    public = {
        r["query_id"]: r["query"]
        for r in load_queries(str(shared_data / "sourcebench/sourcebench_public_queries_v1.csv")).to_pylist()
    }
    for row in queries.to_pylist():
        if row["language"] == "en":
            assert row["query"] == public[row["query_id"][1:-3]]


def test_sweep_object_reports_key_errors_before_sending(tmp_path):
    queries = load_queries(str(REPO / "../shared/data/sourcebench/sourcebench_public_queries_v1.csv"))
    systems = [
        load_systems(
            write_systems(
                tmp_path,
                [
                    {
                        "model_name": "m",
                        "api_base": "http://127.0.0.1:9/v1",
                        "api_key_env": "SB_UNSET_VARIABLE",
                    }
                ],
            )
        )[0]
    ]
    with pytest.raises(ValueError, match="SB_UNSET_VARIABLE"):
        Sweep(RunStore(str(tmp_path / "run")), queries, systems, KeyRing(environ={}))
    assert not (tmp_path / "run").exists()
