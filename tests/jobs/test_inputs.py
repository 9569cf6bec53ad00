"""Input readers: valid files load, bad files fail with a message naming file, line/record and field."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler.errors import InputError
from jobs.inputs import load_citations, load_enriched_scores, load_queries, official_score
from jobs.schemas import CITATIONS_SCHEMA, QUERIES_SCHEMA


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return str(path)


def error_of(call, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        call(*args, **kwargs)
    return info.value


def test_public_queries_load(shared_data):
    table = load_queries(str(shared_data / "sourcebench" / "sourcebench_public_queries_v1.csv"))
    assert table.schema.equals(QUERIES_SCHEMA, check_metadata=False)
    assert table.num_rows == 65
    counts = {t: table["query_type"].to_pylist().count(t) for t in set(table["query_type"].to_pylist())}
    assert counts == {"VACOS": 13, "DebateQA": 13, "HotpotQA": 13, "Pinocchios": 13, "QuoraQuestions": 13}


def test_queries_official_old_column_names(tmp_path):
    path = write(tmp_path / "q.csv", "query_ID,query,source\n007,What is X?,HotpotQA\n")
    assert load_queries(path).to_pylist() == [
        {"query_id": "7", "query": "What is X?", "query_type": "HotpotQA", "language": None}
    ]


def test_queries_wrong_columns(tmp_path):
    path = write(tmp_path / "q.csv", "id,text,type\n1,a,b\n")
    err = error_of(load_queries, path)
    assert (err.source, err.line, err.field) == (path, 1, "query_id")
    assert "q.csv, line 1, field 'query_id': missing column" in str(err)


def test_queries_non_utf8(tmp_path):
    path = write(tmp_path / "q.csv", "query_id,query,query_type\n1,caf\xe9,VACOS\n".encode("latin-1"))
    err = error_of(load_queries, path)
    assert err.line == 2 and "not valid UTF-8" in str(err) and "0xe9" in str(err)


def test_queries_duplicate_ids(tmp_path):
    path = write(tmp_path / "q.csv", "query_id,query,query_type\n1,a,VACOS\n2,b,VACOS\n01,c,VACOS\n")
    err = error_of(load_queries, path)
    assert (err.line, err.field) == (4, "query_id") and "first on line 2" in str(err)


def test_queries_empty_value(tmp_path):
    path = write(tmp_path / "q.csv", "query_id,query,query_type\n1,,VACOS\n")
    err = error_of(load_queries, path)
    assert (err.line, err.field) == (2, "query")


CITATION_ROWS = [
    {"system": "gpt", "query_id": "1", "url": "https://a.example/x", "rank": 1, "language": "en"},
    {"system": "gpt", "query_id": "1", "url": "https://b.example/y", "rank": 2},
]


def test_citations_jsonl_csv_parquet_agree(tmp_path):
    jsonl = write(tmp_path / "c.jsonl", "".join(json.dumps(r) + "\n" for r in CITATION_ROWS))
    csv_path = write(
        tmp_path / "c.csv",
        "system,query_id,url,rank,language\ngpt,1,https://a.example/x,1,en\ngpt,1,https://b.example/y,2,\n",
    )
    parquet = str(tmp_path / "c.parquet")
    pq.write_table(pa.Table.from_pylist(CITATION_ROWS), parquet)
    tables = [load_citations(p) for p in (jsonl, csv_path, parquet)]
    for table in tables:
        assert table.schema.equals(CITATIONS_SCHEMA, check_metadata=False)
        assert table.select(["system", "query_id", "url", "rank", "language"]).to_pylist() == [
            {"system": "gpt", "query_id": "1", "url": "https://a.example/x", "rank": 1, "language": "en"},
            {"system": "gpt", "query_id": "1", "url": "https://b.example/y", "rank": 2, "language": None},
        ]


def test_citations_malformed_jsonl_names_line(tmp_path):
    path = write(tmp_path / "c.jsonl", json.dumps(CITATION_ROWS[0]) + '\n{"system": "gpt",\n')
    err = error_of(load_citations, path)
    assert err.line == 2 and "malformed JSON" in str(err)


def test_citations_bad_url_and_rank(tmp_path):
    bad_url = write(
        tmp_path / "u.jsonl", json.dumps({**CITATION_ROWS[0], "url": "javascript:alert(1)"}) + "\n"
    )
    err = error_of(load_citations, bad_url)
    assert (err.line, err.field) == (1, "url")
    bad_rank = write(tmp_path / "r.csv", "system,query_id,url,rank\ngpt,1,https://a.example/,zero\n")
    err = error_of(load_citations, bad_rank)
    assert (err.line, err.field) == (2, "rank")


def test_citations_duplicate_rank(tmp_path):
    rows = [CITATION_ROWS[0], {**CITATION_ROWS[1], "rank": 1}]
    path = write(tmp_path / "c.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    err = error_of(load_citations, path)
    assert (err.line, err.field) == (2, "rank") and "first at line 1" in str(err)


def test_citations_duplicate_across_files(tmp_path):
    a = write(tmp_path / "a.jsonl", json.dumps(CITATION_ROWS[0]) + "\n")
    b = write(tmp_path / "b.jsonl", json.dumps(CITATION_ROWS[0]) + "\n")
    err = error_of(load_citations, [a, b])
    assert err.field == "rank" and "more than one file" in str(err)


def test_answer_url_bundle(tmp_path):
    bundle = {
        "submission_mode": "answer_url_bundle",
        "model_name": "example-model",
        "runs": [
            {
                "query_id": "7",
                "answer_text": "ans",
                "cited_urls": ["https://a.example/1", "https://b.example/2"],
                "raw_response": {},
            },
        ],
    }
    path = write(tmp_path / "bundle.json", json.dumps(bundle))
    table = load_citations(path)
    assert table.select(["system", "query_id", "url", "rank", "answer_text"]).to_pylist() == [
        {
            "system": "example-model",
            "query_id": "7",
            "url": "https://a.example/1",
            "rank": 1,
            "answer_text": "ans",
        },
        {
            "system": "example-model",
            "query_id": "7",
            "url": "https://b.example/2",
            "rank": 2,
            "answer_text": "ans",
        },
    ]
    bundle["runs"][0]["cited_urls"][1] = "not a url"
    err = error_of(load_citations, write(tmp_path / "bad.json", json.dumps(bundle)))
    assert err.field == "runs[0].cited_urls[1].url"


def test_malformed_official_json_names_line(tmp_path):
    path = write(tmp_path / "s.json", '[\n  {"query_id": 1,\n   "aggregated_sources": [}\n]')
    err = error_of(load_citations, path)
    assert err.line == 3 and "malformed JSON" in str(err)


def test_official_scraped_json_keeps_ids_and_topk(tmp_path):
    scraped = [
        {
            "query_id": 3,
            "query_text": "q",
            "ai_model_name": "gpt-5",
            "runs": [{"answer_text": "a"}],
            "aggregated_sources": [
                {
                    "agg_source_id": 11,
                    "url_canonical": "https://a.example/",
                    "url_examples": ["https://a.example/?x"],
                    "selected_topk": True,
                    "text_content": "t",
                    "search_result_date": "2026-01-01",
                },
                {"agg_source_id": 12, "url_examples": ["https://b.example/"], "selected_topk": False},
            ],
        }
    ]
    table = load_citations(write(tmp_path / "s.json", json.dumps(scraped)))
    assert table.select(
        ["system", "query_id", "url", "rank", "agg_source_id", "selected_topk"]
    ).to_pylist() == [
        {
            "system": "gpt-5",
            "query_id": "3",
            "url": "https://a.example/",
            "rank": 1,
            "agg_source_id": "11",
            "selected_topk": True,
        },
        {
            "system": "gpt-5",
            "query_id": "3",
            "url": "https://b.example/",
            "rank": 2,
            "agg_source_id": "12",
            "selected_topk": False,
        },
    ]


def test_official_score_policy():
    assert [official_score(v) for v in (4, 4.5, " 3 ", "x", "", None, True, [], float("nan"), "inf")] == [
        4.0,
        4.5,
        3.0,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    ]


def test_enriched_scores_query_type_fallbacks(tmp_path):
    enriched = [
        {
            "query_id": "1",
            "query_type": "VACOS",
            "aggregated_sources": [
                {
                    "agg_source_id": 1,
                    "url": "https://a.example/",
                    "content_vector": {"semantic_relevance": "5"},
                },
                {
                    "agg_source_id": 2,
                    "url": "https://b.example/",
                },  # no content_vector: skipped, as officially
            ],
        },
        {"query_id": 2, "aggregated_sources": [{"agg_source_id": 3, "content_vector": {"authority": 2}}]},
        {"query_id": 3, "aggregated_sources": [{"agg_source_id": 4, "content_vector": {}}]},
    ]
    table = load_enriched_scores(write(tmp_path / "e.json", json.dumps(enriched)), "sys", {"2": "HotpotQA"})
    assert table["query_type"].to_pylist() == ["VACOS", "HotpotQA", "Unknown"]
    assert table["semantic_relevance"].to_pylist() == [5.0, None, None]
    assert table["authority"].to_pylist() == [None, 2.0, None]


def test_official_pages_import(tmp_path):
    from crawler.schema import PAGE_SCHEMA
    from crawler.urls import url_key
    from jobs.inputs import load_official_pages

    scraped = [
        {
            "query_id": 1,
            "aggregated_sources": [
                {
                    "agg_source_id": 1,
                    "url_canonical": "https://www.cdc.gov/flu/index.html?utm_source=x",
                    "url_examples": ["https://www.cdc.gov/flu/index.html"],
                    "text_content": "Flu facts. " * 50,
                    "title": "Flu",
                    "search_result_date": "2026-01-20",
                    "search_result_last_updated": "2026-01-22T10:00:00Z",
                    "domain_category": "gov",
                },
                {"agg_source_id": 2, "url_canonical": "https://blog.example/post", "text_content": ""},
            ],
        },
        {
            "query_id": 2,
            "aggregated_sources": [
                {
                    "agg_source_id": 3,
                    "url_canonical": "https://www.cdc.gov/flu/index.html",
                    "text_content": "other",
                },
            ],
        },
    ]
    table = load_official_pages(write(tmp_path / "scraped.json", json.dumps(scraped)))
    assert table.schema.equals(PAGE_SCHEMA)
    rows = {r["url"]: r for r in table.to_pylist()}
    assert set(rows) == {"https://www.cdc.gov/flu/index.html", "https://blog.example/post"}
    cdc = rows["https://www.cdc.gov/flu/index.html"]
    assert cdc["url_key"] == url_key("https://www.cdc.gov/flu/index.html")
    assert (cdc["status"], cdc["published_date"], cdc["modified_date"]) == ("ok", "2026-01-20", "2026-01-22")
    assert cdc["text_full"].startswith("Flu facts.") and cdc["domain_category"] == "gov"
    assert rows["https://blog.example/post"]["status"] == "error"
