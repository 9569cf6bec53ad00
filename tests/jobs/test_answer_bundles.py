"""``collect`` writes one official answer_url_bundle per endpoint system that the official validator accepts.

``official_problems`` restates every rule of the official ``validate_official_submission.py`` for the
``answer_url_bundle`` mode (github.com/WukLab/SourceBench, src/evaluation), read from its source:
required fields, the common metadata checks, the mode, the runs and each run's fields, and the two
recommendations that only warn. Each rule is also shown to fire on a bundle that breaks it.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from crawler.storage import RunStore
from jobs.collectors.bundles import write_answer_bundles
from jobs.collectors.systems import EndpointSystem, SerpSystem
from jobs.collectors.tables import ANSWERS_SCHEMA
from jobs.schemas import CITATIONS_SCHEMA

REQUIRED = [
    "submission_mode",
    "submitter_name",
    "contact_email",
    "model_name",
    "web_search_mode",
    "agrees_to_reproducibility_policy",
    "runs",
]
RUN_REQUIRED = ["query_id", "answer_text", "cited_urls"]


def _text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _url(value) -> bool:
    if not _text(value):
        return False
    parsed = urlparse(value.strip())
    return parsed.scheme in {"http", "https"} and bool(parsed.netloc)


def official_problems(payload: dict) -> tuple[list[str], list[str]]:
    """(errors, warnings) by the official validator's rules for an answer_url_bundle."""
    errors: list[str] = []
    warnings: list[str] = []
    if not isinstance(payload, dict):
        return ["top-level object"], warnings
    errors += [f"missing {field}" for field in REQUIRED if field not in payload]
    if not _text(payload.get("submitter_name")):
        errors.append("submitter_name")
    email = payload.get("contact_email")
    if not (_text(email) and "@" in email and "." in email.split("@")[-1]):
        errors.append("contact_email")
    if not _text(payload.get("model_name")):
        errors.append("model_name")
    if payload.get("agrees_to_reproducibility_policy") is not True:
        errors.append("agrees_to_reproducibility_policy")
    if not _text(payload.get("web_search_mode")):
        errors.append("web_search_mode")
    for recommended in ("model_version", "organization"):
        if recommended not in payload:
            warnings.append(recommended)
    if payload.get("submission_mode") != "answer_url_bundle":
        errors.append("submission_mode")
    runs = payload.get("runs")
    if not isinstance(runs, list) or not runs:
        return [*errors, "runs"], warnings
    seen = set()
    for i, run in enumerate(runs):
        if not isinstance(run, dict):
            errors.append(f"runs[{i}] object")
            continue
        errors += [f"runs[{i}] missing {field}" for field in RUN_REQUIRED if field not in run]
        if not isinstance(run.get("query_id"), int | str):
            errors.append(f"runs[{i}].query_id")
        if not _text(run.get("answer_text")):
            errors.append(f"runs[{i}].answer_text")
        urls = run.get("cited_urls")
        if not isinstance(urls, list) or not urls:
            errors.append(f"runs[{i}].cited_urls")
        else:
            errors += [f"runs[{i}].cited_urls[{j}]" for j, url in enumerate(urls) if not _url(url)]
        if run.get("raw_response") is None:
            warnings.append(f"runs[{i}].raw_response")
        try:
            json.dumps(run.get("raw_response"))
        except TypeError:
            errors.append(f"runs[{i}].raw_response")
        if run.get("query_id") in seen:
            warnings.append(f"duplicate {run.get('query_id')}")
        seen.add(run.get("query_id"))
    return errors, warnings


def system(name: str, **metadata) -> EndpointSystem:
    defaults = {
        "submitter_name": "Ada Lab",
        "contact_email": "ada@lab.example",
        "organization": "Lab",
        "agrees_to_reproducibility_policy": True,
    }
    return EndpointSystem(
        name=name, model_name=f"{name}-model", api_base="http://127.0.0.1:1/v1", **{**defaults, **metadata}
    )


def answer(name: str, query_id: str, status: str = "ok", text: str = "An answer.") -> dict:
    return {
        "system": name,
        "query_id": query_id,
        "kind": "endpoint",
        "status": status,
        "answer_text": text,
        "raw_response_json": json.dumps({"id": f"r-{query_id}", "choices": []}),
        "collected_at": datetime(2026, 12, 1, tzinfo=UTC),
        "chunk_id": "c0",
    }


def cite(name: str, query_id: str, rank: int, url: str) -> dict:
    return {"system": name, "query_id": query_id, "url": url, "rank": rank}


@pytest.fixture
def bundles(tmp_path):
    answers = pa.Table.from_pylist(
        [
            answer("gpt", "1"),
            answer("gpt", "2"),
            answer("gpt", "3", status="error", text=""),  # failed: left out
            answer("gpt", "4", text="  "),  # empty answer: left out
            answer("gpt", "5"),  # no citation: left out
            answer("anon", "1"),
        ],
        schema=ANSWERS_SCHEMA,
    )
    citations = pa.Table.from_pylist(
        [
            cite("gpt", "1", 2, "https://b.example/two"),
            cite("gpt", "1", 1, "https://a.example/one"),
            cite("gpt", "1", 3, "https://a.example/one"),  # cited twice: once in the bundle
            cite("gpt", "2", 1, "https://c.example/"),
            cite("anon", "1", 1, "https://a.example/one"),
        ],
        schema=CITATIONS_SCHEMA,
    )
    store = RunStore(str(tmp_path / "run"))
    systems = [
        system("gpt"),
        system("anon", submitter_name=None, agrees_to_reproducibility_policy=None),
        SerpSystem(kind="serp", name="google", results_path="serp.csv"),
    ]
    summary = write_answer_bundles(store, systems, answers, citations)
    return store, summary


def test_one_bundle_per_endpoint_system_that_the_validator_accepts(bundles) -> None:
    store, summary = bundles
    assert set(summary) == {"gpt", "anon"}  # the SERP system gets none
    payload = json.loads(store.read_bytes("submissions/gpt.answer_url_bundle.json"))
    assert official_problems(payload) == ([], [])
    assert [run["query_id"] for run in payload["runs"]] == [1, 2]  # digit ids as numbers, officially
    assert payload["runs"][0]["cited_urls"] == ["https://a.example/one", "https://b.example/two"]
    assert payload["runs"][0]["raw_response"] == {"id": "r-1", "choices": []}
    assert summary["gpt"]["runs"] == 2
    assert summary["gpt"]["left_out"] == {"not_ok": 1, "empty_answer": 1, "no_citation": 1}


def test_a_system_without_submitter_metadata_gets_no_bundle(bundles) -> None:
    store, summary = bundles
    assert "submitter_name" in summary["anon"]["skipped"]
    assert "agrees_to_reproducibility_policy" in summary["anon"]["skipped"]
    assert not store.exists("submissions/anon.answer_url_bundle.json")


BREAKS = {
    "submission_mode": lambda p: p.update(submission_mode="endpoint"),
    "missing runs": lambda p: p.pop("runs"),
    "submitter_name": lambda p: p.update(submitter_name=" "),
    "contact_email": lambda p: p.update(contact_email="ada@lab"),
    "model_name": lambda p: p.update(model_name=""),
    "agrees_to_reproducibility_policy": lambda p: p.update(agrees_to_reproducibility_policy="yes"),
    "web_search_mode": lambda p: p.update(web_search_mode=None),
    "runs": lambda p: p.update(runs=[]),
    "runs[0] object": lambda p: p["runs"].__setitem__(0, "text"),
    "runs[0] missing cited_urls": lambda p: p["runs"][0].pop("cited_urls"),
    "runs[0].query_id": lambda p: p["runs"][0].update(query_id=1.5),
    "runs[0].answer_text": lambda p: p["runs"][0].update(answer_text=""),
    "runs[0].cited_urls[0]": lambda p: p["runs"][0].update(cited_urls=["ftp://x.example/"]),
}


@pytest.mark.parametrize("rule", sorted(BREAKS))
def test_every_rule_fires_on_a_bundle_that_breaks_it(bundles, rule: str) -> None:
    store, _ = bundles
    payload = copy.deepcopy(json.loads(store.read_bytes("submissions/gpt.answer_url_bundle.json")))
    BREAKS[rule](payload)
    errors, _ = official_problems(payload)
    assert any(error.startswith(rule) for error in errors), errors


@pytest.mark.parametrize(
    "change,warning",
    [
        (lambda p: p.pop("organization"), "organization"),
        (lambda p: p.pop("model_version"), "model_version"),
        (lambda p: p["runs"][0].update(raw_response=None), "runs[0].raw_response"),
        (lambda p: p["runs"][1].update(query_id=p["runs"][0]["query_id"]), "duplicate 1"),
    ],
)
def test_recommendations_only_warn(bundles, change, warning: str) -> None:
    store, _ = bundles
    payload = json.loads(store.read_bytes("submissions/gpt.answer_url_bundle.json"))
    change(payload)
    errors, warnings = official_problems(payload)
    assert errors == [] and warning in warnings
