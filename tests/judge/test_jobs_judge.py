"""``sourcebench judge`` (jobs/judge.py): requests file or audit inputs in, judgments out, exit codes."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.csv as pacsv

from crawler.storage import RunStore
from jobs.cli import main
from judge.run import read_judgments
from tests.judge.conftest import requests_for


def _yaml(tmp_path) -> str:
    path = tmp_path / "judge.yaml"
    path.write_text("judge:\n  engine: signals\n  signals: {relevance: overlap}\n  write_batch_size: 8\n")
    return str(path)


def test_cli_judges_a_requests_csv_and_resumes(tmp_path, run_uri, page_records, capsys):
    requests = requests_for(page_records, limit=5)
    path = tmp_path / "requests.csv"
    pacsv.write_csv(requests, path)
    args = ["judge", "--run", run_uri, "--requests", str(path), "--config", _yaml(tmp_path)]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["judged"] == 5 * 2 * 3 and first["engine"] == "signals"
    assert main([*args, "--current-date", "2026-01-25", "--rescore"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["judged"] == 5 * 2  # only the meta stage depends on the date
    assert read_judgments(run_uri).num_rows == 5 * 2 * 4


def test_cli_builds_requests_from_audit_inputs(tmp_path, run_uri, page_records, capsys):
    store = RunStore(run_uri)
    keys = page_records["url_key"].to_pylist()[:3]
    store.write_table(
        "inputs/selected_sources.parquet", pa.table({"url_key": keys + keys[:1], "query_id": ["q1"] * 4})
    )
    store.write_table(
        "inputs/queries.parquet", pa.table({"query_id": ["q1"], "query": ["Is coffee healthy?"]})
    )
    assert main(["judge", "--run", run_uri, "--config", _yaml(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["stage_requests"] == 3 * 3


def test_cli_input_errors_exit_2_and_name_the_field(tmp_path, run_uri, capsys):
    bad = tmp_path / "requests.csv"
    bad.write_text("url_key,query_id\na,q1\n")
    assert main(["judge", "--run", run_uri, "--requests", str(bad)]) == 2
    assert "query_text" in capsys.readouterr().err
    yaml_path = tmp_path / "bad.yaml"
    yaml_path.write_text("judge:\n  prompts: {layout: sideways}\n")
    assert main(["judge", "--run", run_uri, "--requests", str(bad), "--config", str(yaml_path)]) == 2
    err = capsys.readouterr().err
    assert str(yaml_path) in err and "prompts.layout" in err
    assert main(["judge", "--run", run_uri, "--requests", str(bad), "--rescore"]) == 2
