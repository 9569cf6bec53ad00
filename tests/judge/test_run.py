"""judge_run with the signals engine: Parquet out, explicit skipped rows, resume, cache, content vectors."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from crawler.errors import InputError
from crawler.storage import RunStore
from judge import (
    CONTENT_VECTORS_SCHEMA,
    DIMENSION_KEYS,
    JUDGMENT_SCHEMA,
    JudgeConfig,
    content_vectors,
    judge_run,
)
from judge.run import read_judgments
from judge.signals import SignalsJudge
from tests.judge.conftest import OFFICIAL_DATE, requests_for, write_run

CONFIG = JudgeConfig.from_dict({
    "engine": "signals", "write_batch_size": 16, "signals": {"relevance": "overlap"},
    "prompts": {"current_date": OFFICIAL_DATE.isoformat()},
})  # fmt: skip


def test_judgments_land_in_parquet_with_skipped_rows_for_failed_pages(run_uri: str, page_records: pa.Table):
    requests = requests_for(page_records)
    summary = judge_run(run_uri, requests, CONFIG)
    table = read_judgments(run_uri)
    assert table.schema.equals(JUDGMENT_SCHEMA, check_metadata=False)
    assert table.num_rows == requests.num_rows * 3 == summary["stage_requests"]
    skipped = table.filter(pc.equal(table["status"], "skipped"))
    assert set(skipped["url_key"].to_pylist()) == {"failed-timeout", "failed-robots"}
    assert all("timeout" in e or "robots" in e for e in skipped["error"].to_pylist())
    assert all(not s for s in skipped["scores"].to_pylist())  # never a default score
    scored = table.filter(pc.equal(table["status"], "scored"))
    assert scored.num_rows == table.num_rows - skipped.num_rows
    assert summary["statuses"] == {"scored": scored.num_rows, "skipped": skipped.num_rows}
    assert len(RunStore(run_uri).listdir("judgments", suffix=".parquet")) > 1  # parts of write_batch_size


def test_rerun_skips_done_judgments_and_resumes_after_a_crash(run_uri: str, page_records, monkeypatch):
    requests = requests_for(page_records)
    real_score = SignalsJudge.score
    produced = []

    def crash_midway(self, batch):
        for completion in real_score(self, batch):
            produced.append(completion.key)
            if len(produced) == 40:
                raise RuntimeError("killed")
            yield completion

    monkeypatch.setattr(SignalsJudge, "score", crash_midway)
    with pytest.raises(RuntimeError):
        judge_run(run_uri, requests, CONFIG)
    partial = read_judgments(run_uri).num_rows
    assert 0 < partial < requests.num_rows * 3
    monkeypatch.setattr(SignalsJudge, "score", real_score)
    summary = judge_run(run_uri, requests, CONFIG)
    table = read_judgments(run_uri)
    keys = table["judgment_key"].to_pylist()
    assert len(keys) == len(set(keys)) == requests.num_rows * 3
    assert summary["already_done"] == partial
    again = judge_run(run_uri, requests, CONFIG)
    assert again["judged"] == 0 and read_judgments(run_uri).num_rows == len(keys)


def test_shared_cache_serves_a_second_run(tmp_path, page_records):
    requests = requests_for(page_records, limit=6)
    config = CONFIG.model_copy(update={"cache_uri": str(tmp_path / "cache")})
    first = judge_run(write_run(tmp_path / "a", page_records), requests, config)
    second = judge_run(write_run(tmp_path / "b", page_records), requests, config)
    assert first["judged"] > 0 and second["judged"] == 0
    assert second["from_cache"] == first["judged"]


def test_content_vectors_one_row_per_page_and_query(run_uri: str, page_records):
    requests = requests_for(page_records)
    judge_run(run_uri, requests, CONFIG)
    vectors = content_vectors(read_judgments(run_uri))
    assert vectors.schema.equals(CONTENT_VECTORS_SCHEMA, check_metadata=False)
    assert vectors.num_rows == requests.num_rows
    ok = vectors.filter(pc.equal(vectors["judge_status"], "scored"))
    for key in DIMENSION_KEYS:
        values = ok[key].to_pylist()
        assert all(v in (1.0, 2.0, 3.0, 4.0, 5.0) for v in values), key
        assert all(ok[f"{key}_justification"].to_pylist())
    bad = vectors.filter(pc.equal(vectors["judge_status"], "skipped"))
    assert bad.num_rows == 4 and all(bad[k].null_count == 4 for k in DIMENSION_KEYS)


def test_bad_requests_and_missing_pages_are_input_errors(tmp_path, page_records):
    run = write_run(tmp_path, page_records)
    with pytest.raises(InputError, match="query_text"):
        judge_run(run, pa.table({"url_key": ["a"], "query_id": ["q"]}), CONFIG)
    with pytest.raises(InputError, match="line 2, field 'query_id'"):
        judge_run(
            run, pa.table({"url_key": ["a", "b"], "query_id": ["q", None], "query_text": ["x", "y"]}), CONFIG
        )
    with pytest.raises(InputError, match="pages"):
        judge_run(str(tmp_path / "empty"), requests_for(page_records, limit=1), CONFIG)


def test_unknown_page_key_is_an_explicit_skipped_row(run_uri: str):
    requests = pa.table({"url_key": ["nope"], "query_id": ["q1"], "query_text": ["anything"]})
    judge_run(run_uri, requests, CONFIG)
    table = read_judgments(run_uri)
    assert table["status"].to_pylist() == ["skipped"] * 3
    assert table["error"].to_pylist() == ["no page record"] * 3


def test_judge_run_on_an_s3_run(s3_bucket: str, page_records):
    run = f"s3://{s3_bucket}/runs/a1"
    pages = page_records.slice(0, 4)
    RunStore(run).write_table("pages/part-00000.parquet", pages)
    requests = requests_for(pages, limit=4)
    summary = judge_run(run, requests, CONFIG)
    assert summary["judged"] == 4 * 2 * 3
    assert read_judgments(run).num_rows == 24
    assert judge_run(run, requests, CONFIG)["judged"] == 0
