"""An audit that fails says so, and a rerun of the same folder recovers: every scenario on loopback.

One run folder goes through the scenarios in order, as a user would: every page refused by the
default network policy (exit 1, stamped incomplete), the host allowed (exit 0, scores > 0, the dead
link in the coverage), a judge endpoint that is down (exit 1 at once) and then up (complete), a
judge outage after a good start (``error`` rows, exit 1) retried by a plain rerun, then
``--retry-failed`` and ``--force crawl``. Real parts throughout: a loopback web server, the real
crawler in Ray tasks, the signals judge and an OpenAI-compatible judge server over HTTP.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.compute as pc
import pytest

from crawler.storage import RunStore
from jobs import audit as audit_module
from tests.conftest import free_port
from tests.jobs.loopback import LoopbackWeb, OpenAIJudge

pytestmark = pytest.mark.slow

PAGES_PER_QUERY = 2
#: Flags every run of the module shares: the signals judge without its embedding model, and the
#: reduce on a thread pool (its Ray Data twin is covered by the demo audit).
COMMON = [
    *("--set", "judge.signals.relevance=overlap", "--set", "cluster.stream=false"),
    *("--set", "reduce.executor=local"),
]


@pytest.fixture(scope="module")
def web():
    server = LoopbackWeb()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def inputs(web, tmp_path_factory) -> list[str]:
    """Two systems x 3 queries citing loopback pages; system b's third query cites a dead link."""
    folder = tmp_path_factory.mktemp("inputs")
    queries = folder / "queries.csv"
    queries.write_text(
        "query_id,query,query_type\n"
        "q1,How do volcanoes form?,HotpotQA\nq2,What causes tides?,QuoraQuestions\n"
        "q3,Are glaciers shrinking?,DebateQA\n"
    )
    rows = []
    for system, offset in (("system-a", 0), ("system-b", 10)):
        for q in range(3):
            urls = [web.url(f"/page/{offset + q * PAGES_PER_QUERY + i}") for i in range(PAGES_PER_QUERY)]
            if system == "system-b" and q == 2:
                urls.append(web.url("/gone"))
            rows += [
                {"system": system, "query_id": f"q{q + 1}", "url": url, "rank": rank}
                for rank, url in enumerate(urls, start=1)
            ]
    citations = folder / "citations.jsonl"
    citations.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return ["--queries", str(queries), "--citations", str(citations)]


def audit(capsys, run: Path, inputs: list[str], *flags: str) -> tuple[int, str, str]:
    """``sourcebench audit`` in this process (it joins the module's Ray); exit status, stdout, stderr."""
    parser = argparse.ArgumentParser()
    audit_module.add_arguments(parser)
    code = audit_module.run(parser.parse_args(["--run", str(run), *inputs, *COMMON, *flags]))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def openai_flags(base_url: str, *settings: str) -> list[str]:
    """The host allowed (as before) and the openai judge at ``base_url``, with no retries."""
    assignments = [
        "judge.engine=openai",
        f"judge.openai.base_url={base_url}",
        "judge.openai.model=loopback-judge",
        "judge.openai.max_retries=0",
        *settings,
    ]
    return ["--allowlist", "127.0.0.1", *(arg for a in assignments for arg in ("--set", a))]


def test_bad_input_fails_before_ray_starts(inputs, tmp_path, monkeypatch, capsys):
    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started before the inputs were checked")

    monkeypatch.setattr(audit_module, "ensure_ray", no_ray)
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,query,query_type\nq1,How do volcanoes form?,HotpotQA\nq1,Why?,HotpotQA\n")
    code, _, err = audit(capsys, tmp_path / "run", ["--queries", str(bad), *inputs[2:]])
    assert code == 2
    assert str(bad) in err and "line 3" in err and "duplicate query_id" in err, err


@pytest.fixture(scope="module")
def run(local_ray, tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("audit") / "run"


def test_all_refused_fails_with_a_diagnosis_and_stamps_the_leaderboard(run, inputs, web, capsys):
    code, out, err = audit(capsys, run, inputs)
    assert code == 1
    assert "INCOMPLETE" in err and "blocked_address" in err and "--allowlist" in err, err
    assert "refused 127.0.0.1" in err  # the top reason, with the refusal message's own hint
    store = RunStore(str(run))
    assert store.exists("leaderboard/leaderboard_overall.csv")
    assert "blocked_address" in store.read_bytes("leaderboard/INCOMPLETE.txt").decode()
    assert "INCOMPLETE" in store.read_bytes("leaderboard/report.html").decode()
    coverage = store.read_json("scores/coverage.json")
    assert coverage["complete"] is False and coverage["overall"]["judged"] == 0
    assert sum(web.hits.values()) == 0  # nothing reached the server
    assert store.read_json("manifest.json")["attempts"][-1]["status"] == "incomplete"


def test_rerun_with_the_host_allowed_refetches_what_was_refused(run, inputs, web, capsys):
    code, out, err = audit(capsys, run, inputs, "--allowlist", "127.0.0.1")
    assert code == 0, err[-3000:]
    assert "[crawl] running" in out and "fetching 13 pages again (status blocked_address" in out, out
    store = RunStore(str(run))
    overall = store.read_json("leaderboard/leaderboard_data.json")["overall"]
    assert all(row["weighted_total_content_score"] > 0 for row in overall)
    assert not store.exists("leaderboard/INCOMPLETE.txt")
    coverage = store.read_json("scores/coverage.json")
    assert coverage["complete"] and coverage["systems"]["system-a"]["share"] == 1.0
    # The dead link shows in the coverage of the system that cites it.
    assert coverage["systems"]["system-b"]["judged"] == coverage["systems"]["system-b"]["selected"] - 1
    assert coverage["page_status"]["http_error"] == 1
    assert "system-b" in out and "/ 7" in out  # coverage beside the printed leaderboard
    assert {n for path, n in web.hits.items() if path != "/robots.txt"} == {1}  # each URL fetched once
    pages = store.read_table("pages")
    assert len(set(pages["url_key"].to_pylist())) == pages.num_rows == 13


def test_judge_endpoint_down_fails_at_once_and_the_rerun_completes(run, inputs, capsys):
    port = free_port()
    judge = openai_flags(f"http://127.0.0.1:{port}/v1")
    code, _, err = audit(capsys, run, inputs, *judge)
    assert code == 1 and "unreachable" in err and f"127.0.0.1:{port}" in err, err
    server = OpenAIJudge(port=port)
    try:
        code, out, err = audit(capsys, run, inputs, *judge)
    finally:
        server.stop()
    assert code == 0, err[-3000:]
    assert "[crawl] already committed, skipped" in out and "[judge] running" in out
    assert server.chats == 12 * 3  # 12 fetched pages x 1 query, three stages each
    judgments = RunStore(str(run)).read_table("judgments")
    openai = judgments.filter(pc.equal(judgments["engine"], "openai"))
    statuses = openai["status"].to_pylist()
    assert statuses.count("scored") == 36  # the 12 fetched pages, three stages each
    assert statuses.count("skipped") == 3 and len(statuses) == 39  # the dead link: a row per stage


def test_judge_errors_fail_the_audit_and_a_plain_rerun_retries_them(run, inputs, capsys):
    server = OpenAIJudge(failing=True)
    judge = openai_flags(server.base_url, "judge.prompts.label=p2")
    try:
        code, _, err = audit(capsys, run, inputs, *judge)
        assert code == 1 and "judgments failed with error" in err, err
        failed = server.chats
        server.failing = False
        code, out, err = audit(capsys, run, inputs, *judge)
    finally:
        server.stop()
    assert code == 0, err[-3000:]
    assert "[judge] running" in out and server.chats == 2 * failed  # exactly the failed ones again
    coverage = RunStore(str(run)).read_json("scores/coverage.json")
    assert coverage["complete"] and coverage["judge_status"].get("error") is None


def test_retry_failed_and_force_refetch_without_duplicates(run, inputs, web, capsys):
    before = {path: n for path, n in web.hits.items() if path != "/robots.txt"}
    code, out, err = audit(capsys, run, inputs, "--allowlist", "127.0.0.1", "--retry-failed")
    assert code == 0, err[-3000:]
    assert web.hits["/gone"] == before["/gone"] + 1  # the failed page, fetched again
    assert all(web.hits[path] == n for path, n in before.items() if path != "/gone")  # nothing else
    code, out, err = audit(capsys, run, inputs, "--allowlist", "127.0.0.1", "--force", "crawl")
    assert code == 0, err[-3000:]
    assert all(web.hits[path] == n + 1 for path, n in before.items() if path.startswith("/page/"))
    for stage in ("crawl", "judge", "scores", "reduce", "report"):
        assert f"[{stage}] running" in out, out
    store = RunStore(str(run))
    pages = store.read_table("pages")
    assert len(set(pages["url_key"].to_pylist())) == pages.num_rows == 13
