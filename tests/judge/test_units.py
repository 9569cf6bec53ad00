"""Units of work: one per page part, done markers keyed by the judge identity, error rows retried,
exactly once when the judge is killed with SIGKILL mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from crawler.layout import LAYOUT
from crawler.storage import RunStore
from judge import JudgeConfig, judge_run
from judge.engines.base import Completion
from judge.run import FINAL_STATUSES, read_judgments
from judge.signals import SignalsJudge
from tests.judge.conftest import OFFICIAL_DATE, requests_for

REPO = Path(__file__).resolve().parents[2]
CONFIG = JudgeConfig.from_dict({
    "engine": "signals", "write_batch_size": 4, "signals": {"relevance": "overlap"}, "executor": "local",
    "prompts": {"current_date": OFFICIAL_DATE.isoformat()},
})  # fmt: skip


def write_parts(root: Path, pages: pa.Table, size: int) -> str:
    """A run whose pages are cut into parts of ``size`` records, as a crawl writes them."""
    store = RunStore(str(root / "run"))
    for n, start in enumerate(range(0, pages.num_rows, size)):
        store.write_table(f"pages/shard-{n:05d}-00000.parquet", pages.slice(start, size))
    return store.uri


def final_keys(run: str) -> list[str]:
    table = read_judgments(run)
    return table.filter(pc.is_in(table["status"], pa.array(FINAL_STATUSES)))["judgment_key"].to_pylist()


def test_each_part_is_a_unit_with_a_marker_and_a_rerun_reads_no_page(tmp_path, page_records, monkeypatch):
    run = write_parts(tmp_path, page_records, 10)
    requests = requests_for(page_records)
    first = judge_run(run, requests, CONFIG)
    assert first["units"] == first["units_run"] == 5 and first["judged"] > 0
    store = RunStore(run)
    markers = store.listdir(LAYOUT.judge_markers(first["identity"]), suffix=".json")
    assert markers == [f"shard-0000{n}-00000.json" for n in range(5)]
    assert all(LAYOUT.unit_of_judgment_part(n) for n in store.listdir("judgments", suffix=".parquet"))

    def no_page_reads(*args, **kwargs):
        raise AssertionError("a done unit read its pages")

    monkeypatch.setattr("judge.units.UnitJudge._pages", no_page_reads)
    again = judge_run(run, requests, CONFIG)
    assert again["units_run"] == 0 and again["judged"] == 0
    assert again["already_done"] == first["stage_requests"]


def test_new_pairs_rerun_a_unit_but_reuse_its_judgments(tmp_path, page_records):
    run = write_parts(tmp_path, page_records, 10)
    one = requests_for(page_records, queries=(("q1", "Is coffee healthy?"),))
    judge_run(run, one, CONFIG)
    two = requests_for(page_records, queries=(("q1", "Is coffee healthy?"), ("q2", "Who wrote it?")))
    summary = judge_run(run, two, CONFIG)
    assert (
        summary["units_run"] == 5
        and summary["judged"]
        == len(set(page_records["url_key"].to_pylist()) - {"failed-timeout", "failed-robots"}) * 3
    )
    keys = final_keys(run)
    assert len(keys) == len(set(keys)) == two.num_rows * 3


def test_a_unit_with_error_rows_has_no_marker_and_the_rerun_redoes_only_those(
    tmp_path, page_records, monkeypatch
):
    run = write_parts(tmp_path, page_records, 10)
    requests = requests_for(page_records)
    real_score = SignalsJudge.score

    def flaky(self, batch):
        for completion in real_score(self, batch):
            if completion.key.startswith(("0", "1", "2")):  # about 3/16 of the keys: a transport failure
                yield Completion(completion.key, None, error="connection reset")
            else:
                yield completion

    monkeypatch.setattr(SignalsJudge, "score", flaky)
    first = judge_run(run, requests, CONFIG)
    errors = first["statuses"]["error"]
    assert errors > 0
    store = RunStore(run)
    marked = store.listdir(LAYOUT.judge_markers(first["identity"]), suffix=".json")
    assert len(marked) < 5  # units with an error row are not done
    monkeypatch.setattr(SignalsJudge, "score", real_score)
    second = judge_run(run, requests, CONFIG)
    assert second["judged"] == errors and second["statuses"] == {"scored": errors}
    assert len(store.listdir(LAYOUT.judge_markers(first["identity"]), suffix=".json")) == 5
    keys = final_keys(run)
    assert len(keys) == len(set(keys)) == requests.num_rows * 3


def test_pages_fetched_again_are_judged_by_their_outcome_and_never_twice(tmp_path, page_records):
    """A rerun of the crawl rewrites a shard's parts: a refused page now ok is judged, an unchanged
    page that moved to a new part of its shard reuses its judgments, and no key is committed twice."""
    pages = pa.concat_tables([page_records.slice(0, 3), page_records.slice(page_records.num_rows - 2)])
    store = RunStore(str(tmp_path / "run"))
    store.write_table("pages/shard-00000-00000.parquet", pages)
    requests = requests_for(pages, queries=(("q1", "Is coffee healthy?"),))
    first = judge_run(store.uri, requests, CONFIG)
    assert first["statuses"] == {"scored": 9, "skipped": 6}
    # The refetch: the timed-out page now ok (the text of another page) and one ok page moved.
    rows = pages.to_pylist()
    url = "https://slow.example.org/a"
    recovered = {**rows[0], "url_key": "failed-timeout", "url": url, "final_url": url}
    moved = rows[1]
    store.write_table(
        "pages/shard-00000-00000.parquet", pa.Table.from_pylist([rows[0], rows[2], rows[4]], pages.schema)
    )
    store.write_table(
        "pages/shard-00000-00001.parquet", pa.Table.from_pylist([recovered, moved], pages.schema)
    )
    second = judge_run(store.uri, requests, CONFIG)
    assert second["units_run"] == 2 and second["judged"] == 3  # the recovered page's three stages
    keys = read_judgments(store.uri)["judgment_key"].to_pylist()
    assert len(keys) == len(set(keys)) == 15 + 3


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_commits_every_judgment_exactly_once(tmp_path, page_records):
    run = write_parts(tmp_path, page_records, 3)
    requests = requests_for(page_records)
    path = tmp_path / "requests.parquet"
    pq.write_table(requests, path)
    config = str(tmp_path / "judge.yaml")
    Path(config).write_text(
        "judge:\n  engine: signals\n  signals: {relevance: overlap}\n  write_batch_size: 2\n"
        "  executor: local\n"
        f"  prompts: {{current_date: '{OFFICIAL_DATE.isoformat()}'}}\n"
    )
    command = [
        sys.executable,
        "-m",
        "jobs.judge",
        "--run",
        run,
        "--requests",
        str(path),
        "--config",
        str(config),
    ]
    store = RunStore(run)
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(store.listdir("judgments", suffix=".parquet")) < 6 and proc.poll() is None:
        assert time.monotonic() < deadline, "the judge wrote nothing in 120 s"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = final_keys(run)
    assert 0 < len(partial) < requests.num_rows * 3, "killed too late to test anything"
    assert subprocess.run(command, cwd=REPO, capture_output=True, timeout=300).returncode == 0
    keys = final_keys(run)
    assert len(keys) == len(set(keys)) == requests.num_rows * 3
    assert set(partial) <= set(keys)
