"""Every bad input to the CLI ends in one line on stderr naming the file, field or flag, and exit 2.

Each case builds its inputs in a fresh folder, runs ``sourcebench`` in this process (a traceback
would fail the test as an exception) and checks the exit status, that stderr is exactly one line,
and that the line names what is wrong. A few cases also run in a subprocess, where a traceback
would be printed rather than raised.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.cli import SUBCOMMANDS, build_parser, main
from jobs.schemas import SOURCE_SCORES_SCHEMA
from judge.rubric import DIMENSION_KEYS

REPO = Path(__file__).resolve().parents[1]
QUERIES = str(REPO / "jobs/demo/queries.csv")
BUNDLE = str(REPO / "jobs/demo/citations/demo-careful.json")
NOT_UTF8 = b"store:\n  run: caf\xe9\n"
BINARY = bytes(range(256)) * 4
BIG_FIELD = "query_id,query,query_type\n1," + "x" * (200_000) + ",VACOS\n"


def write(tmp: Path, name: str, content: str | bytes) -> str:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def enriched(
    vector: dict | None = None, records: int = 1, query_ids: list[str] | None = None, **source
) -> str:
    vector = vector or {key: 4 for key in DIMENSION_KEYS}
    ids = query_ids or [str(i + 1) for i in range(records)]
    return json.dumps(
        [
            {
                "query_id": qid,
                "query": f"question {qid}",
                "query_type": "VACOS",
                "aggregated_sources": [
                    {
                        "agg_source_id": 1,
                        "url_canonical": "https://a.example/page",
                        "text_content_length": 1200,
                        "content_vector": vector,
                        **source,
                    }
                ],
            }
            for qid in ids
        ]
    )


def scores_parquet(tmp: Path, name: str, **overrides) -> str:
    row = {
        "model_name": "sys",
        "query_id": "1",
        "query_type": "VACOS",
        "agg_source_id": "1",
        "source_url": "https://a.example/",
        "text_content_length": 1000.0,
        "language": None,
        **{key: 4.0 for key in DIMENSION_KEYS},
        **overrides,
    }
    path = tmp / name
    pq.write_table(pa.Table.from_pylist([row], schema=SOURCE_SCORES_SCHEMA), path)
    return str(path)


def vector(**changes) -> dict:
    return {**{key: 4 for key in DIMENSION_KEYS}, **changes}


def audit_yaml(tmp: Path, extra: str = "", name: str = "audit.yaml") -> str:
    text = f"store: {{run: {tmp / 'run'}}}\ninputs: {{queries: {QUERIES}, citations: [{BUNDLE}]}}\n{extra}"
    return write(tmp, name, text)


def reduce_args(tmp: Path, *scores: str) -> list[str]:
    args = ["reduce", "--out", str(tmp / "lb"), "--executor", "local", "--bootstrap", "0"]
    for item in scores:
        args += ["--scores", item]
    return args


def good_enriched(tmp: Path) -> str:
    return write(tmp, "good.json", enriched())


Case = tuple[str, Callable[[Path], list[str]], list[str]]

CASES: list[Case] = [
    # -- the command line itself ------------------------------------------------------------------
    ("unknown-command", lambda t: ["foo"], ["unknown command 'foo'", "audit", "reduce"]),
    ("unknown-top-option", lambda t: ["--frobnicate"], ["unknown option '--frobnicate'"]),
    ("unknown-flag", lambda t: ["reduce", "--out", "o", "--scores", "a", "--bogus"], ["--bogus"]),
    ("missing-required-flag", lambda t: ["export", "--run", str(t)], ["--out"]),
    ("reduce-without-scores", lambda t: ["reduce", "--out", str(t / "lb")], ["--scores"]),
    (
        "bootstrap-negative",
        lambda t: ["reduce", "--out", "o", "--scores", "a", "--bootstrap", "-5"],
        ["--bootstrap", "-5"],
    ),
    (
        "bootstrap-not-a-number",
        lambda t: ["reduce", "--out", "o", "--scores", "a", "--bootstrap", "many"],
        ["--bootstrap", "many"],
    ),
    ("seed-not-a-number", lambda t: ["reduce", "--out", "o", "--scores", "a", "--seed", "x"], ["--seed"]),
    (
        "policy-unknown",
        lambda t: ["reduce", "--out", "o", "--scores", "a", "--policy", "strict"],
        ["--policy"],
    ),
    (
        "executor-unknown",
        lambda t: ["reduce", "--out", "o", "--scores", "a", "--executor", "gpu"],
        ["--executor"],
    ),
    # -- reduce inputs ----------------------------------------------------------------------------
    (
        "reduce-empty-file",
        lambda t: reduce_args(t, write(t, "empty.parquet", b"")),
        ["empty.parquet", "Parquet"],
    ),
    ("reduce-binary-file", lambda t: reduce_args(t, write(t, "noise.bin", BINARY)), ["noise.bin", "Parquet"]),
    ("reduce-csv-as-scores", lambda t: reduce_args(t, write(t, "s.csv", "a,b\n1,2\n")), ["s.csv", "Parquet"]),
    (
        "reduce-missing-file",
        lambda t: reduce_args(t, str(t / "absent.parquet")),
        ["absent.parquet", "not found"],
    ),
    (
        "reduce-folder-without-parquet",
        lambda t: reduce_args(t, str((t / "d").mkdir() or t / "d")),
        ["no Parquet files"],
    ),
    (
        "reduce-parquet-missing-columns",
        lambda t: reduce_args(
            t, (pq.write_table(pa.table({"x": [1]}), t / "x.parquet"), str(t / "x.parquet"))[1]
        ),
        ["x.parquet", "model_name"],
    ),
    (
        "reduce-parquet-score-9",
        lambda t: reduce_args(t, scores_parquet(t, "s.parquet", semantic_relevance=9.0)),
        ["s.parquet", "semantic_relevance", "1-5"],
    ),
    (
        "reduce-parquet-score-0",
        lambda t: reduce_args(t, scores_parquet(t, "s.parquet", freshness=0.0)),
        ["s.parquet", "freshness", "1-5"],
    ),
    (
        "reduce-parquet-negative-length",
        lambda t: reduce_args(t, scores_parquet(t, "s.parquet", text_content_length=-3.0)),
        ["s.parquet", "text_content_length", "negative"],
    ),
    ("reduce-enriched-without-name", lambda t: reduce_args(t, good_enriched(t)), ["good.json", "NAME=PATH"]),
    (
        "reduce-enriched-malformed",
        lambda t: reduce_args(t, "a=" + write(t, "bad.json", "[{")),
        ["bad.json", "malformed JSON"],
    ),
    (
        "reduce-enriched-not-utf8",
        lambda t: reduce_args(t, "a=" + write(t, "latin.json", b'[{"q": "caf\xe9"}]')),
        ["latin.json", "UTF-8"],
    ),
    (
        "reduce-enriched-binary",
        lambda t: reduce_args(t, "a=" + write(t, "noise.json", BINARY)),
        ["noise.json"],
    ),
    (
        "reduce-enriched-object",
        lambda t: reduce_args(t, "a=" + write(t, "obj.json", "{}")),
        ["obj.json", "list"],
    ),
    (
        "reduce-enriched-unsupported",
        lambda t: reduce_args(t, "a=" + write(t, "u.json", '[{"x": 1}]')),
        ["u.json", "[0]"],
    ),
    (
        "reduce-score-above-5",
        lambda t: reduce_args(t, "a=" + write(t, "e.json", enriched(vector(authority=371)))),
        ["e.json", "content_vector.authority", "1-5"],
    ),
    (
        "reduce-score-negative",
        lambda t: reduce_args(t, "a=" + write(t, "e.json", enriched(vector(freshness=-98.56)))),
        ["e.json", "content_vector.freshness", "1-5"],
    ),
    (
        "reduce-score-string-out-of-range",
        lambda t: reduce_args(t, "a=" + write(t, "e.json", enriched(vector(transparency="7")))),
        ["e.json", "transparency", "1-5"],
    ),
    (
        "reduce-score-zero",
        lambda t: reduce_args(t, "a=" + write(t, "e.json", enriched(vector(objectivity_tone=0)))),
        ["e.json", "objectivity_tone"],
    ),
    (
        "reduce-negative-length",
        lambda t: reduce_args(t, "a=" + write(t, "e.json", enriched(text_content_length=-1))),
        ["e.json", "text_content_length", "negative"],
    ),
    (
        "reduce-duplicate-query-record",
        lambda t: reduce_args(t, "a=" + write(t, "e.json", enriched(query_ids=["7", "07"]))),
        ["e.json", "[1].query_id", "duplicate"],
    ),
    (
        "reduce-duplicate-system-name",
        lambda t: reduce_args(t, "a=" + good_enriched(t), "a=" + write(t, "other.json", enriched())),
        ["--scores", "'a'", "twice"],
    ),
    (
        "reduce-same-file-twice",
        lambda t: reduce_args(t, "a=" + good_enriched(t), "b=" + str(t / "good.json")),
        ["--scores", "good.json", "twice"],
    ),
    ("reduce-empty-name", lambda t: reduce_args(t, "=" + good_enriched(t)), ["--scores"]),
    ("reduce-empty-path", lambda t: reduce_args(t, "a="), ["--scores"]),
    (
        "reduce-query-metadata-missing",
        lambda t: [*reduce_args(t, "a=" + good_enriched(t)), "--query-metadata", str(t / "q.csv")],
        ["q.csv", "not found"],
    ),
    (
        "reduce-query-metadata-huge-field",
        lambda t: [
            *reduce_args(t, "a=" + good_enriched(t)),
            "--query-metadata",
            write(t, "q.csv", BIG_FIELD),
        ],
        ["q.csv", "line 2", "field larger"],
    ),
    (
        "reduce-query-metadata-missing-column",
        lambda t: [
            *reduce_args(t, "a=" + good_enriched(t)),
            "--query-metadata",
            write(t, "q.csv", "id,q\n1,a\n"),
        ],
        ["q.csv", "query_id"],
    ),
    (
        "reduce-query-metadata-duplicate-id",
        lambda t: [
            *reduce_args(t, "a=" + good_enriched(t)),
            "--query-metadata",
            write(t, "q.csv", "query_id,query,query_type\n1,a,VACOS\n01,b,VACOS\n"),
        ],
        ["q.csv", "line 3", "duplicate"],
    ),
    (
        "reduce-query-metadata-not-utf8",
        lambda t: [
            *reduce_args(t, "a=" + good_enriched(t)),
            "--query-metadata",
            write(t, "q.csv", b"query_id,query,query_type\n1,caf\xe9,VACOS\n"),
        ],
        ["q.csv", "line 2", "UTF-8"],
    ),
    (
        "reduce-query-metadata-empty-value",
        lambda t: [
            *reduce_args(t, "a=" + good_enriched(t)),
            "--query-metadata",
            write(t, "q.csv", "query_id,query,query_type\n1,,VACOS\n"),
        ],
        ["q.csv", "line 2", "query"],
    ),
    (
        "reduce-query-metadata-extra-cells",
        lambda t: [
            *reduce_args(t, "a=" + good_enriched(t)),
            "--query-metadata",
            write(t, "q.csv", "query_id,query,query_type\n1,a,VACOS,extra\n"),
        ],
        ["q.csv", "line 2"],
    ),
    (
        "reduce-query-metadata-is-folder",
        lambda t: [*reduce_args(t, "a=" + good_enriched(t)), "--query-metadata", str(t)],
        ["directory"],
    ),
    (
        "reduce-deprecated-run-flag-bad",
        lambda t: ["reduce", "--out", "o", "--run", str(t / "nope.parquet")],
        ["nope.parquet"],
    ),
    # -- audit config ------------------------------------------------------------------------------
    (
        "audit-config-missing",
        lambda t: ["audit", "--config", str(t / "absent.yaml")],
        ["absent.yaml", "not found"],
    ),
    (
        "audit-config-not-utf8",
        lambda t: ["audit", "--config", write(t, "a.yaml", NOT_UTF8)],
        ["a.yaml", "line 2", "UTF-8"],
    ),
    ("audit-config-binary", lambda t: ["audit", "--config", write(t, "a.yaml", BINARY)], ["a.yaml"]),
    (
        "audit-config-nul-byte",
        lambda t: ["audit", "--config", write(t, "a.yaml", "store:\n  run: a\x00b\n")],
        ["a.yaml", "line 2", "binary"],
    ),
    ("audit-config-folder", lambda t: ["audit", "--config", str(t)], ["directory"]),
    (
        "audit-config-list",
        lambda t: ["audit", "--config", write(t, "a.yaml", "- store\n- inputs\n")],
        ["a.yaml", "mapping"],
    ),
    (
        "audit-config-scalar",
        lambda t: ["audit", "--config", write(t, "a.yaml", "just words\n")],
        ["a.yaml", "mapping"],
    ),
    (
        "audit-config-malformed",
        lambda t: ["audit", "--config", write(t, "a.yaml", "store: {run: [\n")],
        ["a.yaml", "malformed YAML"],
    ),
    (
        "audit-config-tab-indent",
        lambda t: ["audit", "--config", write(t, "a.yaml", "store:\n\trun: x\n")],
        ["a.yaml", "line 2"],
    ),
    (
        "audit-unknown-section",
        lambda t: ["audit", "--config", audit_yaml(t, "reduc: {policy: official}\n")],
        ["audit.yaml", "'reduc'", "unknown key"],
    ),
    (
        "audit-reduce-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "reduce: {bootstap_replicates: 10}\n")],
        ["audit.yaml", "reduce.bootstap_replicates"],
    ),
    (
        "audit-ray-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "cluster: {ray: {adress: 'h:1'}}\n")],
        ["cluster.ray.adress"],
    ),
    (
        "audit-ray-negative-cpus",
        lambda t: ["audit", "--config", audit_yaml(t, "cluster: {ray: {num_cpus: -4}}\n")],
        ["cluster.ray.num_cpus"],
    ),
    (
        "audit-report-prices-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "report: {prices: {usd_per_1m_promt_tokens: 1}}\n")],
        ["report.prices.usd_per_1m_promt_tokens"],
    ),
    (
        "audit-report-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "report: {nboot: 10}\n")],
        ["report.nboot"],
    ),
    (
        "audit-crawl-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "crawl: {politness: {}}\n")],
        ["crawl.politness"],
    ),
    (
        "audit-crawl-nested-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "crawl: {limits: {timeout: 3}}\n")],
        ["crawl.limits.timeout"],
    ),
    (
        "audit-judge-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "judge: {engin: vllm}\n")],
        ["judge.engin"],
    ),
    (
        "audit-judge-vllm-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "judge: {vllm: {modle: x}}\n")],
        ["judge.vllm.modle"],
    ),
    (
        "audit-store-typo",
        lambda t: ["audit", "--config", audit_yaml(t, "cluster: {streem: true}\n")],
        ["cluster.streem"],
    ),
    (
        "audit-top-k-zero",
        lambda t: ["audit", "--config", audit_yaml(t, "scoring: {top_k: 0}\n")],
        ["scoring.top_k"],
    ),
    (
        "audit-confidence-2",
        lambda t: ["audit", "--config", audit_yaml(t, "reduce: {confidence_level: 2}\n")],
        ["reduce.confidence_level"],
    ),
    (
        "audit-policy-unknown",
        lambda t: ["audit", "--config", audit_yaml(t, "reduce: {policy: strict}\n")],
        ["reduce.policy"],
    ),
    (
        "audit-poll-negative",
        lambda t: ["audit", "--config", audit_yaml(t, "cluster: {poll_s: -1}\n")],
        ["cluster.poll_s"],
    ),
    (
        "audit-bad-date",
        lambda t: ["audit", "--config", audit_yaml(t, "judge: {prompts: {current_date: soon}}\n")],
        ["judge.prompts.current_date"],
    ),
    (
        "audit-engine-unknown",
        lambda t: ["audit", "--config", audit_yaml(t, "judge: {engine: gpt}\n")],
        ["judge.engine"],
    ),
    ("audit-section-not-mapping", lambda t: ["audit", "--config", audit_yaml(t, "reduce: 5\n")], ["reduce"]),
    (
        "audit-missing-store",
        lambda t: ["audit", "--set", f"inputs.queries={QUERIES}", "--set", f"inputs.citations={BUNDLE}"],
        ["store"],
    ),
    (
        "audit-set-without-equals",
        lambda t: ["audit", "--config", audit_yaml(t), "--set", "reduce.policy"],
        ["--set", "reduce.policy"],
    ),
    (
        "audit-set-bad-yaml",
        lambda t: ["audit", "--config", audit_yaml(t), "--set", "reduce.policy=[oops"],
        ["--set", "reduce.policy"],
    ),
    (
        "audit-set-into-scalar",
        lambda t: ["audit", "--config", audit_yaml(t), "--set", "store.run.x=1"],
        ["--set", "store.run"],
    ),
    (
        "audit-set-unknown-key",
        lambda t: ["audit", "--config", audit_yaml(t), "--set", "reduce.bootstap=3"],
        ["--set", "reduce.bootstap"],
    ),
    (
        "audit-set-empty-key",
        lambda t: ["audit", "--config", audit_yaml(t), "--set", "reduce..policy=x"],
        ["--set"],
    ),
    (
        "audit-queries-missing",
        lambda t: ["audit", "--config", audit_yaml(t), "--queries", str(t / "nq.csv")],
        ["nq.csv", "not found"],
    ),
    (
        "audit-citation-path-with-comma",
        lambda t: ["audit", "--config", audit_yaml(t), "--citations", str(t / "cit, v2.json")],
        ["cit, v2.json", "not found"],
    ),
    (
        "audit-config-relative-missing",
        lambda t: [
            "audit",
            "--config",
            write(t, "sub/a.yaml", "store: {run: r}\ninputs: {queries: q.csv, citations: [c.json]}\n"),
        ],
        [str(Path("sub") / "q.csv"), "not found"],
    ),
    (
        "audit-bundle-duplicate-query",
        lambda t: [
            "audit",
            "--config",
            audit_yaml(t),
            "--citations",
            write(
                t,
                "dup.json",
                json.dumps(
                    {
                        "submission_mode": "answer_url_bundle",
                        "model_name": "m",
                        "runs": [
                            {
                                "query_id": "demo_vacos_1",
                                "answer_text": "a",
                                "cited_urls": ["https://a.example/"],
                            },
                            {
                                "query_id": "demo_vacos_1",
                                "answer_text": "b",
                                "cited_urls": ["https://b.example/"],
                            },
                        ],
                    }
                ),
            ),
        ],
        ["dup.json", "demo_vacos_1"],
    ),
    # -- judge ---------------------------------------------------------------------------------------
    (
        "judge-config-not-utf8",
        lambda t: ["judge", "--run", str(t), "--config", write(t, "j.yaml", NOT_UTF8)],
        ["j.yaml", "UTF-8"],
    ),
    (
        "judge-config-binary",
        lambda t: ["judge", "--run", str(t), "--config", write(t, "j.yaml", BINARY)],
        ["j.yaml"],
    ),
    (
        "judge-config-unknown-key",
        lambda t: [
            "judge",
            "--run",
            str(t),
            "--config",
            write(t, "j.yaml", "judge: {sampling: {temp: 0}}\n"),
        ],
        ["j.yaml", "sampling.temp"],
    ),
    (
        "judge-config-list",
        lambda t: ["judge", "--run", str(t), "--config", write(t, "j.yaml", "- a\n")],
        ["j.yaml", "mapping"],
    ),
    (
        "judge-config-missing",
        lambda t: ["judge", "--run", str(t), "--config", str(t / "nj.yaml")],
        ["nj.yaml", "not found"],
    ),
    ("judge-engine-unknown", lambda t: ["judge", "--run", str(t), "--engine", "gpt"], ["--engine"]),
    (
        "judge-token-budget-negative",
        lambda t: ["judge", "--run", str(t), "--token-budget", "-3"],
        ["--token-budget"],
    ),
    ("judge-num-cpus-zero", lambda t: ["judge", "--run", str(t), "--num-cpus", "0"], ["--num-cpus"]),
    ("judge-bad-date", lambda t: ["judge", "--run", str(t), "--current-date", "tomorrow"], ["current_date"]),
    ("judge-no-requests", lambda t: ["judge", "--run", str(t)], ["selected_sources", "not found"]),
    (
        "judge-requests-missing",
        lambda t: ["judge", "--run", str(t), "--requests", str(t / "r.parquet")],
        ["r.parquet"],
    ),
    (
        "judge-requests-binary",
        lambda t: ["judge", "--run", str(t), "--requests", write(t, "r.parquet", BINARY)],
        ["r.parquet"],
    ),
    (
        "judge-requests-conflicting-text",
        lambda t: [
            "judge",
            "--run",
            str(t),
            "--requests",
            write(t, "r.csv", "url_key,query_id,query_text\nk1,1,first question\nk1,1,another question\n"),
        ],
        ["r.csv", "line 3", "query_text"],
    ),
    # -- calibrate ---------------------------------------------------------------------------------
    (
        "calibrate-dimension-typo",
        lambda t: ["calibrate", "--run", str(t), "--max-mae-dim", "freshnes=0.5"],
        ["--max-mae-dim", "freshnes"],
    ),
    (
        "calibrate-dimension-no-value",
        lambda t: ["calibrate", "--run", str(t), "--max-mae-dim", "freshness"],
        ["--max-mae-dim"],
    ),
    (
        "calibrate-dimension-negative",
        lambda t: ["calibrate", "--run", str(t), "--max-mae-dim", "freshness=-1"],
        ["--max-mae-dim", "freshness"],
    ),
    (
        "calibrate-fewshot-negative",
        lambda t: ["calibrate", "--run", str(t), "--fewshot-per-stage", "-3"],
        ["--fewshot-per-stage"],
    ),
    (
        "calibrate-max-mae-negative",
        lambda t: ["calibrate", "--run", str(t), "--max-mae", "-1"],
        ["--max-mae"],
    ),
    ("calibrate-max-mae-nan", lambda t: ["calibrate", "--run", str(t), "--max-mae", "nan"], ["--max-mae"]),
    (
        "calibrate-min-items-zero",
        lambda t: ["calibrate", "--run", str(t), "--min-items", "0"],
        ["--min-items"],
    ),
    (
        "calibrate-labels-missing",
        lambda t: ["calibrate", "--run", str(t), "--labels", str(t / "l.csv")],
        ["l.csv"],
    ),
    (
        "calibrate-labels-huge-field",
        lambda t: [
            "calibrate",
            "--run",
            str(t),
            "--labels",
            write(
                t, "l.csv", "query_id,url,annotator,freshness\n1,https://a.example/," + "x" * 200_000 + ",3\n"
            ),
        ],
        ["l.csv", "line 2"],
    ),
    # -- crawl ---------------------------------------------------------------------------------------
    (
        "crawl-urls-missing",
        lambda t: ["crawl", "--run", str(t / "r"), "--urls", str(t / "u.txt"), "--no-ray"],
        ["u.txt"],
    ),
    (
        "crawl-shard-size-zero",
        lambda t: ["crawl", "--run", "r", "--urls", "u.txt", "--shard-size", "0"],
        ["--shard-size"],
    ),
    (
        "crawl-render-unknown",
        lambda t: ["crawl", "--run", "r", "--urls", "u.txt", "--render", "sometimes"],
        ["--render"],
    ),
    (
        "crawl-config-not-utf8",
        lambda t: ["crawl", "--run", "r", "--urls", "u.txt", "--config", write(t, "c.yaml", NOT_UTF8)],
        ["c.yaml", "UTF-8"],
    ),
    (
        "crawl-config-unknown-key",
        lambda t: [
            "crawl",
            "--run",
            "r",
            "--urls",
            "u.txt",
            "--config",
            write(t, "c.yaml", "crawl: {shards: 3}\n"),
        ],
        ["c.yaml", "shards"],
    ),
    (
        "crawl-config-negative",
        lambda t: [
            "crawl",
            "--run",
            "r",
            "--urls",
            "u.txt",
            "--config",
            write(t, "c.yaml", "shard_size: -1\n"),
        ],
        ["c.yaml", "shard_size"],
    ),
    # -- report --------------------------------------------------------------------------------------
    ("report-n-boot-zero", lambda t: ["report", "--run", str(t), "--n-boot", "0"], ["--n-boot"]),
    ("report-level-2", lambda t: ["report", "--run", str(t), "--level", "2"], ["--level"]),
    ("report-serp-top-k-zero", lambda t: ["report", "--run", str(t), "--serp-top-k", "0"], ["--serp-top-k"]),
    (
        "report-price-negative",
        lambda t: ["report", "--run", str(t), "--price-prompt", "-1"],
        ["--price-prompt"],
    ),
    (
        "report-config-typo",
        lambda t: ["report", "--run", str(t), "--config", write(t, "r.yaml", "n_bot: 3\n")],
        ["r.yaml", "n_bot"],
    ),
    (
        "report-config-not-utf8",
        lambda t: ["report", "--run", str(t), "--config", write(t, "r.yaml", NOT_UTF8)],
        ["r.yaml", "UTF-8"],
    ),
    (
        "report-ablation-malformed",
        lambda t: ["report", "--run", str(t), "--ablation", "model"],
        ["--ablation"],
    ),
    # -- collect -----------------------------------------------------------------------------------
    ("collect-config-missing", lambda t: ["collect", "--config", str(t / "c.yaml")], ["c.yaml", "not found"]),
    (
        "collect-config-typo",
        lambda t: ["collect", "--config", write(t, "c.yaml", f"out: {t}\nquerys: q.csv\n")],
        ["c.yaml", "querys"],
    ),
    ("collect-config-binary", lambda t: ["collect", "--config", write(t, "c.yaml", BINARY)], ["c.yaml"]),
    (
        "collect-sample-zero",
        lambda t: ["collect", "--out", str(t), "--sample-per-stratum", "0"],
        ["--sample-per-stratum"],
    ),
    (
        "collect-concurrency-zero",
        lambda t: ["collect", "--out", str(t), "--max-concurrency", "0"],
        ["--max-concurrency"],
    ),
    (
        "collect-timeout-negative",
        lambda t: ["collect", "--out", str(t), "--timeout-s", "-1"],
        ["--timeout-s"],
    ),
    (
        "collect-chunk-size-zero",
        lambda t: ["collect", "--out", str(t), "--chunk-size", "0"],
        ["--chunk-size"],
    ),
    (
        "collect-systems-not-utf8",
        lambda t: [
            "collect",
            "--out",
            str(t / "o"),
            "--queries",
            QUERIES,
            "--systems",
            write(t, "s.yaml", NOT_UTF8),
        ],
        ["s.yaml", "UTF-8"],
    ),
    (
        "collect-systems-binary",
        lambda t: [
            "collect",
            "--out",
            str(t / "o"),
            "--queries",
            QUERIES,
            "--systems",
            write(t, "s.json", BINARY),
        ],
        ["s.json"],
    ),
    (
        "collect-systems-missing",
        lambda t: ["collect", "--out", str(t / "o"), "--queries", QUERIES, "--systems", str(t / "s.yaml")],
        ["s.yaml", "not found"],
    ),
    (
        "collect-queries-huge-field",
        lambda t: [
            "collect",
            "--out",
            str(t / "o"),
            "--queries",
            write(t, "q.csv", BIG_FIELD),
            "--serp",
            "g=" + write(t, "g.csv", "query_id,rank,url\n1,1,https://a.example/\n"),
        ],
        ["q.csv", "line 2"],
    ),
    (
        "collect-template-not-utf8",
        lambda t: [
            "collect",
            "--out",
            str(t / "o"),
            "--template",
            write(t, "t.yaml", NOT_UTF8),
            "--serp",
            "g=x.csv",
        ],
        ["t.yaml", "UTF-8"],
    ),
    (
        "collect-secrets-binary",
        lambda t: [
            "collect",
            "--out",
            str(t / "o"),
            "--queries",
            QUERIES,
            "--secrets",
            write(t, "k.yaml", BINARY),
            "--serp",
            "g=" + write(t, "g.csv", "query_id,rank,url\ndemo_vacos_1,1,https://a.example/\n"),
        ],
        ["k.yaml"],
    ),
    # -- --set, the one override path of every command ------------------------------------------------
    (
        "reduce-set-typo",
        lambda t: [*reduce_args(t, "a=" + good_enriched(t)), "--set", "bootstap_replicates=10"],
        ["bootstap_replicates", "unknown key"],
    ),
    (
        "reduce-set-bad-value",
        lambda t: [*reduce_args(t, "a=" + good_enriched(t)), "--set", "batch_size=0"],
        ["batch_size"],
    ),
    (
        "crawl-set-typo",
        lambda t: ["crawl", "--run", "r", "--urls", "u.txt", "--set", "politness.x=1"],
        ["politness"],
    ),
    ("judge-set-typo", lambda t: ["judge", "--run", str(t), "--set", "sampling.temp=0"], ["sampling.temp"]),
    ("report-set-typo", lambda t: ["report", "--run", str(t), "--set", "prices.usd=1"], ["prices.usd"]),
    ("calibrate-set-typo", lambda t: ["calibrate", "--run", str(t), "--set", "max_mea=1"], ["max_mea"]),
    ("collect-set-typo", lambda t: ["collect", "--out", str(t), "--set", "chunk=3"], ["chunk"]),
    ("costbench-set-typo", lambda t: ["costbench", "--run", str(t), "--set", "vllm.modle=x"], ["vllm.modle"]),
    # -- costbench, export, extract -------------------------------------------------------------------
    ("costbench-sample-zero", lambda t: ["costbench", "--run", str(t), "--sample", "0"], ["--sample"]),
    ("costbench-gpus-negative", lambda t: ["costbench", "--run", str(t), "--gpus", "-1"], ["--gpus"]),
    (
        "costbench-gpu-share-over-one",
        lambda t: ["costbench", "--run", str(t), "--gpu-decode-weight-share", "1.5"],
        ["--gpu-decode-weight-share", "1.5"],
    ),
    (
        "costbench-gpu-prefill-zero",
        lambda t: ["costbench", "--run", str(t), "--gpu-prefill-tokens-per-s", "0"],
        ["--gpu-prefill-tokens-per-s"],
    ),
    ("costbench-has-no-rescore", lambda t: ["costbench", "--run", str(t), "--rescore"], ["--rescore"]),
    ("export-run-missing", lambda t: ["export", "--run", str(t / "nope"), "--out", str(t / "o")], ["nope"]),
    ("extract-input-missing", lambda t: ["extract", "--input", str(t / "p.jsonl")], ["p.jsonl"]),
    (
        "extract-input-not-json",
        lambda t: ["extract", "--input", write(t, "p.jsonl", "not json\n")],
        ["p.jsonl", "line 1"],
    ),
    (
        "extract-min-chars-negative",
        lambda t: ["extract", "--input", "p.jsonl", "--min-text-chars", "-1"],
        ["--min-text-chars"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_bad_input_is_one_line_and_exit_2(case: Case, tmp_path: Path, capsys, monkeypatch) -> None:
    _, build, expected = case
    monkeypatch.chdir(tmp_path)
    argv = build(tmp_path)
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip() and "is deprecated" not in line]
    assert code == 2, (argv, out, err)
    assert "Traceback" not in out + err
    assert len(lines) == 1, err
    for text in expected:
        assert text in lines[0], (text, lines[0])


def test_there_are_at_least_100_cases() -> None:
    assert len(CASES) >= 100 and len({case[0] for case in CASES}) == len(CASES)


def test_numeric_strings_in_range_are_scores(tmp_path: Path, capsys) -> None:
    """The official reader takes "4" as 4: only values off the 1-5 scale are rejected."""
    path = write(tmp_path, "e.json", enriched(vector(authority="4", freshness=" 5 ")))
    assert main(reduce_args(tmp_path, f"a={path}")) == 0
    assert "a" in capsys.readouterr().out


def test_set_overrides_a_reduce_setting(tmp_path: Path, capsys) -> None:
    args = [*reduce_args(tmp_path, "a=" + good_enriched(tmp_path)), "--set", "policy=complete"]
    assert main(args) == 0
    data = json.loads((tmp_path / "lb" / "leaderboard_data.json").read_text())
    assert data["metadata"]["policy"] == "complete"


def test_deprecated_run_flag_still_works(tmp_path: Path, capsys) -> None:
    path = good_enriched(tmp_path)
    args = [
        "reduce",
        "--out",
        str(tmp_path / "lb"),
        "--executor",
        "local",
        "--bootstrap",
        "0",
        "--run",
        f"a={path}",
    ]
    assert main(args) == 0
    assert "--run is deprecated, use --scores" in capsys.readouterr().err


def sourcebench(*args: str, stdin: int | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_in_a_fresh_interpreter_no_traceback_reaches_the_user(tmp_path: Path) -> None:
    """The same checks where a traceback would be printed (argparse exits, module imports)."""
    for args, expected in [
        (["foo"], "unknown command 'foo'"),
        (["reduce", "--out", "o", "--scores", "a", "--bootstrap", "-5"], "--bootstrap"),
        (["audit", "--config", write(tmp_path, "a.yaml", BINARY)], "a.yaml"),
    ]:
        done = sourcebench(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and expected in done.stderr, done.stderr


def test_version_and_help() -> None:
    done = sourcebench("--version")
    assert done.returncode == 0 and done.stdout.startswith("sourcebench ")
    done = sourcebench("--help")
    assert done.returncode == 0 and "reduce" in done.stdout and "--version" in done.stdout


def test_a_closed_pipe_is_no_traceback() -> None:
    """``sourcebench reduce -h | head -1``: the reader goes away; no BrokenPipeError is printed."""
    shell = f"{sys.executable} -m jobs.cli reduce --help | head -1"
    done = subprocess.run(["bash", "-c", shell], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("usage: sourcebench reduce")
    assert "BrokenPipe" not in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_option_shows_its_default(command: str) -> None:
    parser, _ = build_parser(command, *SUBCOMMANDS[command])
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    formatter = parser._get_formatter()
    assert options
    for action in options:
        assert "default" in formatter._get_help_string(action).lower(), action.option_strings
