"""``sourcebench extract --input pages.jsonl``: one JSON page record per line on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from crawler.schema import PAGE_SCHEMA

REPO = Path(__file__).resolve().parents[2]


def test_extract_prints_page_records(shared_data, tmp_path):
    folder = shared_data / "pages/htmldate"
    truth = json.loads((folder / "ground_truth.json").read_text())
    names = list(truth)[:3]
    (tmp_path / "plain.html").write_text(
        "<html><head><title>Mine</title></head><body><p>" + "My own page. " * 20
    )
    lines = [{"url": truth[n]["url"], "path": str(folder / "html" / f"{n}.gz")} for n in names]
    lines.append({"url": "https://example.org/mine", "path": "plain.html"})  # relative to the input file
    source = tmp_path / "pages.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "jobs.extract", "--input", str(source)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 4
    assert all(set(r) == set(PAGE_SCHEMA.names) for r in records)
    assert records[-1]["title"] == "Mine" and records[-1]["domain_category"] == "org"
    assert all(r["status"] == "ok" and r["text_full"] for r in records)


def test_extract_names_the_bad_line_and_field(tmp_path):
    source = tmp_path / "pages.jsonl"
    source.write_text('{"url": "https://example.org/", "path": "missing.html"}\n')
    done = subprocess.run([sys.executable, "-m", "jobs.extract", "--input", str(source)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert "line 1" in done.stderr and "'path'" in done.stderr and "missing.html" in done.stderr
