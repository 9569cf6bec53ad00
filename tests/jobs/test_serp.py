"""SERP inputs as a system of kind ``serp``: ranked results per query -> citations rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawler.errors import InputError
from crawler.storage import RunStore
from jobs.cli import main
from jobs.collectors import ANSWERS_SCHEMA, load_serp
from jobs.inputs import load_citations
from jobs.schemas import CITATIONS_SCHEMA, QUERIES_SCHEMA

QUERIES = "query_id,query,query_type,language\n1,best laptop,VACOS,en\n2,beste Laptop,VACOS,de\n"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_csv_with_ranks_and_query_info_from_the_sweep(tmp_path):
    import pyarrow as pa

    path = write(
        tmp_path, "serp.csv", "query_id,rank,url,title\n1,2,https://b.example/,B\n1,1,https://a.example/,A\n"
    )
    queries = pa.Table.from_pylist(
        [{"query_id": "1", "query": "best laptop", "query_type": "VACOS", "language": "en"}],
        schema=QUERIES_SCHEMA,
    )
    table = load_serp(path, "google", queries)
    assert table.schema.equals(CITATIONS_SCHEMA)
    assert [
        (r["rank"], r["url"], r["system"], r["language"], r["query_text"]) for r in table.to_pylist()
    ] == [
        (2, "https://b.example/", "google", "en", "best laptop"),
        (1, "https://a.example/", "google", "en", "best laptop"),
    ]


def test_json_list_mapping_and_jsonl_forms(tmp_path):
    listed = write(
        tmp_path,
        "a.json",
        json.dumps(
            [
                {
                    "query_id": 1,
                    "query": "q",
                    "results": ["https://a.example/", {"url": "https://b.example/", "rank": 5}],
                }
            ]
        ),
    )
    rows = load_serp(listed, "bing").to_pylist()
    assert [(r["query_id"], r["rank"], r["url"]) for r in rows] == [
        ("1", 1, "https://a.example/"),
        ("1", 5, "https://b.example/"),
    ]
    mapping = write(tmp_path, "b.json", json.dumps({"7": ["https://x.example/", "https://y.example/"]}))
    assert load_serp(mapping, "g")["rank"].to_pylist() == [1, 2]
    jsonl = write(
        tmp_path,
        "c.jsonl",
        '{"query_id": "3", "url": "https://z.example/"}\n'
        '{"query_id": "3", "results": ["https://w.example/"]}\n',
    )
    assert load_serp(jsonl, "g")["rank"].to_pylist() == [1, 2]


@pytest.mark.parametrize(
    "name,text,line,field",
    [
        ("s.csv", "query_id,rank,url\n1,1,https://a.example/\n1,x,https://b.example/\n", 3, "rank"),
        ("s.csv", "query_id,rank,url\n1,1,javascript:alert(1)\n", 2, "url"),
        ("s.csv", "query_id,rank,url\n1,1,https://a.example/\n1,1,https://b.example/\n", 3, "rank"),
        (
            "s.json",
            json.dumps([{"query_id": 1, "results": [{"link": "https://a.example/"}]}]),
            None,
            "[0].results[0].url",
        ),
        ("s.csv", "query,url\nq,https://a.example/\n", 1, "query_id"),
    ],
)
def test_bad_serp_files_name_line_and_field(tmp_path, name, text, line, field):
    path = write(tmp_path, name, text)
    with pytest.raises(InputError) as err:
        load_serp(path, "g")
    assert (err.value.source, err.value.line, err.value.field) == (path, line, field)


def test_collect_with_serp_system_writes_citations_and_answers_once(tmp_path):
    queries = write(tmp_path, "q.csv", QUERIES)
    serp = write(
        tmp_path,
        "serp.csv",
        "query_id,rank,url\n1,1,https://a.example/\n1,2,https://b.example/\n9,1,https://outside.example/\n",
    )
    out = tmp_path / "run"
    for _ in range(2):
        assert main(["collect", "--queries", queries, "--serp", f"google={serp}", "--out", str(out)]) == 0
    citations = load_citations(str(out / "citations.parquet"))
    assert citations["url"].to_pylist() == ["https://a.example/", "https://b.example/"]
    assert set(citations["system"].to_pylist()) == {"google"}
    answers = RunStore(str(out)).read_table("answers", schema=ANSWERS_SCHEMA).to_pylist()
    assert sorted((a["query_id"], a["kind"], a["n_citations"]) for a in answers) == [
        ("1", "serp", 2),
        ("2", "serp", 0),
    ]


def test_serp_system_in_a_systems_file_resolves_relative_paths(tmp_path):
    write(tmp_path, "serp.json", json.dumps({"1": ["https://a.example/"]}))
    systems = write(
        tmp_path, "systems.yaml", "systems:\n  - {kind: serp, name: google, results_path: serp.json}\n"
    )
    queries = write(tmp_path, "q.csv", QUERIES)
    assert main(["collect", "--queries", queries, "--systems", systems, "--out", str(tmp_path / "run")]) == 0
    assert load_citations(str(tmp_path / "run/citations.parquet")).num_rows == 1


def test_bad_command_line_exits_2_with_a_message(tmp_path, capsys):
    queries = write(tmp_path, "q.csv", QUERIES)
    assert main(["collect", "--queries", queries, "--out", str(tmp_path / "run")]) == 2
    assert "systems file or SERP file" in capsys.readouterr().err
    assert main(["collect", "--queries", queries, "--serp", "nopath", "--out", str(tmp_path / "run")]) == 2
