"""``sourcebench calibrate`` on a run with two judge configurations and two annotators, values by design.

Configuration ``paper`` scores exactly what annotator A said; ``shared`` adds one point to
semantic relevance on 6 of the 10 pages (MAE 0.6 against A). Annotator B differs from A on known
items. Expected statistics are computed here independently (numpy, scikit-learn, scipy).
"""

from __future__ import annotations

import argparse
import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from crawler.schema import PAGE_SCHEMA
from crawler.storage import RunStore
from jobs import calibrate as calibrate_cli
from jobs.analysis.calibration import GateThresholds, calibrate, judge_scores
from jobs.analysis.labels import load_human_labels
from judge.prompts import load_calibration
from judge.rubric import DIMENSION_KEYS, STAGES, stage_dimensions
from judge.schema import JUDGMENT_SCHEMA

N_PAGES = 10
URLS = [f"https://site{i}.example.org/article/{i}" for i in range(N_PAGES)]


def _scores_a() -> np.ndarray:
    """Annotator A: a (pages x 8) matrix of 1-5 scores spanning the scale."""
    rng = np.random.default_rng(7)
    base = np.linspace(1, 5, N_PAGES).round()[:, None]
    return np.clip(base + rng.integers(-1, 2, size=(N_PAGES, 8)), 1, 5)


def _scores_b(a: np.ndarray) -> np.ndarray:
    b = a.copy()
    b[[0, 3, 8], 0] = np.clip(b[[0, 3, 8], 0] + 1, 1, 5)  # semantic_relevance differs on three pages
    b[5, 7] = np.clip(b[5, 7] - 2, 1, 5)  # authority differs by 2 on one page
    return b


def _write_run(uri: str, a: np.ndarray) -> None:
    store = RunStore(uri)
    keys = [hashlib.sha1(u.encode()).hexdigest()[:20] for u in URLS]
    pages = {
        "url_key": keys,
        "url": URLS,
        "status": ["ok"] * N_PAGES,
        "title": [f"Article {i}" for i in range(N_PAGES)],
        "text_main": [f"Body text of article {i}. " * 30 for i in range(N_PAGES)],
        "published_date": ["2025-06-01"] * N_PAGES,
    }
    columns = {f.name: pa.array(pages[f.name], f.type) for f in PAGE_SCHEMA if f.name in pages}
    table = pa.table({f.name: columns.get(f.name, pa.nulls(N_PAGES, f.type)) for f in PAGE_SCHEMA})
    store.write_table("pages/part-0.parquet", table)
    store.write_table(
        "inputs/queries.parquet",
        pa.table(
            {
                "query_id": ["1"],
                "query": ["what is calibration"],
                "query_type": ["HotpotQA"],
                "language": ["en"],
            }
        ),
    )
    rows = []
    bumped = {0, 2, 4, 6, 7, 9}  # shared: semantic_relevance one point off (down where A gave 5)
    for layout in ("paper", "shared"):
        for i, key in enumerate(keys):
            for stage in STAGES:
                scores = []
                for dim in stage_dimensions(stage):
                    value = int(a[i, DIMENSION_KEYS.index(dim.key)])
                    if layout == "shared" and dim.key == "semantic_relevance" and i in bumped:
                        value = value + 1 if value < 5 else value - 1
                    scores.append({"dimension": dim.key, "score": value, "justification": "x"})
                rows.append(
                    {
                        "judgment_key": f"{layout}-{key}-{stage}",
                        "url_key": key,
                        "query_id": "1",
                        "stage": stage,
                        "status": "scored",
                        "scores": scores,
                        "engine": "vllm",
                        "model": "qwen",
                        "rubric_version": "r2",
                        "prompt_layout": layout,
                    }
                )
    store.write_table("judgments/part-0.parquet", pa.Table.from_pylist(rows, schema=JUDGMENT_SCHEMA))


def _write_labels(path: Path, a: np.ndarray, b: np.ndarray) -> None:
    rows = []
    for name, matrix in (("ann_a", a), ("ann_b", b)):
        for i, url in enumerate(URLS):
            # Spelled differently from the crawler's canonical URL: the join must canonicalise.
            cited = url.replace("https://site", "https://SITE") + "?utm_source=chat"
            rows.append({"query_id": "1", "url": cited, "annotator": name,
                         **{d: int(matrix[i, j]) for j, d in enumerate(DIMENSION_KEYS)}})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["semantic_relevance_justification"] = "Answers the question."
    frame.to_csv(path, index=False)


@pytest.fixture
def calibration_run(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    a = _scores_a()
    b = _scores_b(a)
    _write_run(str(tmp_path / "run"), a)
    _write_labels(tmp_path / "human.csv", a, b)
    return tmp_path / "run", tmp_path / "human.csv", a, b


def _args(**kwargs) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    calibrate_cli.add_arguments(parser)
    argv = []
    for key, value in kwargs.items():
        for item in value if isinstance(value, list) else [value]:
            argv += [f"--{key.replace('_', '-')}", str(item)]
    return parser.parse_args(argv)


def test_agreement_matches_independent_computation(calibration_run) -> None:
    run, labels_path, a, b = calibration_run
    judges = judge_scores(str(run))
    assert sorted(judges) == ["vllm/qwen/paper/r2", "vllm/qwen/shared/r2"]
    labels = load_human_labels(str(labels_path))
    result = calibrate(judges, labels)
    table = result.agreement.set_index(["comparison", "rater_a", "rater_b", "dimension"])
    consensus = (a + b) / 2.0

    for j, dim in enumerate(DIMENSION_KEYS):
        row = table.loc[("annotator_vs_annotator", "ann_a", "ann_b", dim)]
        assert row["n"] == N_PAGES
        assert row["mae"] == pytest.approx(np.abs(a[:, j] - b[:, j]).mean())
        if np.ptp(a[:, j]) or np.ptp(b[:, j]):
            kappa = cohen_kappa_score(a[:, j], b[:, j], weights="quadratic", labels=[1, 2, 3, 4, 5])
            assert row["qwk"] == pytest.approx(kappa)
        paper = table.loc[("judge_vs_human", "vllm/qwen/paper/r2", "human", dim)]
        assert paper["mae"] == pytest.approx(np.abs(a[:, j] - consensus[:, j]).mean())
        assert paper["spearman"] == pytest.approx(spearmanr(a[:, j], consensus[:, j]).statistic)
    shared_vs_paper = table.loc[
        ("judge_vs_judge", "vllm/qwen/paper/r2", "vllm/qwen/shared/r2", "semantic_relevance")
    ]
    assert shared_vs_paper["mae"] == pytest.approx(0.6)
    assert (
        table.loc[("judge_vs_judge", "vllm/qwen/paper/r2", "vllm/qwen/shared/r2", "authority"), "mae"] == 0.0
    )
    assert result.annotators is not None and len(result.annotators) == 8


def test_gate_passes_the_exact_judge_and_fails_the_shifted_one(calibration_run) -> None:
    run, labels_path, a, b = calibration_run
    judges = judge_scores(str(run))
    labels = load_human_labels(str(labels_path)).query("annotator == 'ann_a'")
    result = calibrate(judges, labels, GateThresholds(max_mae=0.5))
    gate = result.gate.set_index(["config", "dimension"])
    assert gate["passed"].xs("vllm/qwen/paper/r2").all()
    failing = gate.loc[("vllm/qwen/shared/r2", "semantic_relevance")]
    assert not failing["passed"] and failing["mae"] == pytest.approx(0.6)
    assert "MAE 0.600 > 0.5" in failing["reason"]
    assert not result.passed
    per_dim = calibrate(judges, labels, GateThresholds(max_mae_by_dimension={"semantic_relevance": 0.7}))
    assert per_dim.passed


def test_cli_exit_codes_outputs_and_fewshot_file(calibration_run, tmp_path: Path, capsys) -> None:
    run, labels_path, _, _ = calibration_run
    out = tmp_path / "cal"
    assert calibrate_cli.run(_args(labels=labels_path, run=run, out=out)) == 1  # shared fails on CR
    assert "gate FAIL vllm/qwen/shared/r2 (semantic_relevance: MAE" in capsys.readouterr().out
    assert (
        calibrate_cli.run(_args(labels=labels_path, run=run, out=out, gate_config="vllm/qwen/paper/r2")) == 0
    )
    for name in ("agreement.csv", "gate.csv", "annotators.csv", "calibration.md", "fewshot.yaml"):
        assert (out / name).exists(), name
    assert "# Judge calibration" in (out / "calibration.md").read_text()

    examples = load_calibration(out / "fewshot.yaml")  # the judge's own loader accepts the file
    assert [len(examples[s]) for s in STAGES] == [2, 2, 2]
    first, second = examples["content"]
    assert first["answer"]["semantic_relevance"]["justification"] == "Answers the question."
    assert sum(v["score"] for v in first["answer"].values()) > sum(
        v["score"] for v in second["answer"].values()
    )
    assert 'Query "what is calibration"' in first["page"] and "titled" in first["page"]

    # Two configurations and no labels: a judge-vs-judge comparison, nothing gated.
    assert calibrate_cli.run(_args(run=run, out=tmp_path / "jj")) == 0
    agreement = pd.read_csv(tmp_path / "jj" / "agreement.csv")
    assert set(agreement["comparison"]) == {"judge_vs_judge"}


def test_bad_labels_are_reported_with_line_and_field(calibration_run, tmp_path: Path, capsys) -> None:
    run, labels_path, _, _ = calibration_run
    lines = labels_path.read_text().splitlines()
    cells = lines[3].split(",")
    cells[3] = "7"  # semantic_relevance of the third label row
    lines[3] = ",".join(cells)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    assert calibrate_cli.run(_args(labels=bad, run=run)) == 2
    err = capsys.readouterr().err
    assert "bad.csv, line 4, field 'semantic_relevance'" in err and "not an integer 1-5" in err


def test_calibration_outputs_are_documented(calibration_run, tmp_path: Path) -> None:
    run, labels_path, _, _ = calibration_run
    calibrate_cli.run(_args(labels=labels_path, run=run, out=tmp_path / "c"))
    docs = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text().splitlines()
    for name in ("agreement", "gate", "annotators"):
        row = next(line for line in docs if line.startswith(f"| `{name}.csv`"))
        columns = pd.read_csv(tmp_path / "c" / f"{name}.csv").columns
        assert [c for c in columns if c not in row] == [], name


def test_calibrate_an_s3_run(s3_bucket: str, tmp_path: Path, capsys) -> None:
    a = _scores_a()
    uri = f"s3://{s3_bucket}/runs/pilot"
    _write_run(uri, a)
    _write_labels(tmp_path / "human.csv", a, a)
    assert (
        calibrate_cli.run(_args(labels=tmp_path / "human.csv", run=uri, gate_config="vllm/qwen/paper/r2"))
        == 0
    )
    assert f"calibration written to {uri}/calibration" in capsys.readouterr().out
    store = RunStore(uri)
    gate = pd.read_csv(io.BytesIO(store.read_bytes("calibration/gate.csv")))
    assert gate["passed"].all() and (gate["mae"] == 0).all()
    assert store.read_bytes("calibration/fewshot.yaml").startswith(b"# Few-shot")
