"""One official ``answer_url_bundle`` submission JSON per endpoint system of a collect run.

The bundle is what the official ``validate_official_submission.py`` checks before an official run:
the submitter's metadata (from the system definition, as in the official endpoint submission file)
and one run per answered query with its answer text and cited URLs. A pair is left out when the
validator would reject it: an answer that failed, an empty answer, or an answer without an http(s)
citation (the counts are returned). A system whose definition lacks the required metadata gets no
bundle, and the reason is returned instead.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa

from crawler.base import RunStore
from jobs.collectors.systems import EndpointSystem
from jobs.leaderboard.writers import json_query_id, safe_file_name

BUNDLE_FOLDER = "submissions"
#: The official validator's "email-like" test: something@domain.tld.
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _http_url(value: Any) -> bool:
    if not isinstance(value, str) or not value.strip():
        return False
    parts = urlsplit(value.strip())
    return parts.scheme in {"http", "https"} and bool(parts.netloc)


def metadata_problems(system: EndpointSystem) -> list[str]:
    """What the system definition lacks for a valid bundle (empty when nothing)."""
    problems = []
    if not (system.submitter_name or "").strip():
        problems.append("submitter_name")
    if not _EMAIL.match((system.contact_email or "").strip()):
        problems.append("contact_email (an email address)")
    if system.agrees_to_reproducibility_policy is not True:
        problems.append("agrees_to_reproducibility_policy: true")
    return problems


def bundle_runs(answers: pa.Table, citations: pa.Table, system: str) -> tuple[list[dict[str, Any]], dict]:
    """The bundle's ``runs`` of one system, in query order, and counts of the pairs left out."""
    urls: dict[str, list[str]] = {}
    for row in sorted(
        (r for r in citations.to_pylist() if r["system"] == system), key=lambda r: (r["query_id"], r["rank"])
    ):
        if _http_url(row["url"]) and row["url"].strip() not in urls.setdefault(row["query_id"], []):
            urls[row["query_id"]].append(row["url"].strip())
    runs, left_out = [], {"not_ok": 0, "empty_answer": 0, "no_citation": 0}
    for row in sorted((r for r in answers.to_pylist() if r["system"] == system), key=lambda r: r["query_id"]):
        if row["status"] != "ok":
            left_out["not_ok"] += 1
        elif not (row["answer_text"] or "").strip():
            left_out["empty_answer"] += 1
        elif not urls.get(row["query_id"]):
            left_out["no_citation"] += 1
        else:
            raw = json.loads(row["raw_response_json"]) if row.get("raw_response_json") else None
            runs.append(
                {
                    "query_id": json_query_id(row["query_id"]),
                    "answer_text": row["answer_text"],
                    "cited_urls": urls[row["query_id"]],
                    "raw_response": raw,
                }
            )
    return runs, left_out


def answer_bundle(system: EndpointSystem, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The official ``answer_url_bundle`` object of one system."""
    bundle = {
        "submission_mode": "answer_url_bundle",
        "submitter_name": system.submitter_name,
        "organization": system.organization,
        "contact_email": system.contact_email,
        "model_name": system.name,
        "model_version": system.model_version or system.model_name,
        "web_search_mode": system.web_search_mode,
        "agrees_to_reproducibility_policy": system.agrees_to_reproducibility_policy,
        "runs": runs,
    }
    if system.notes:
        bundle["notes"] = system.notes
    return bundle


def write_answer_bundles(
    store: RunStore, systems: list[Any], answers: pa.Table, citations: pa.Table
) -> dict[str, dict[str, Any]]:
    """Write ``submissions/<system>.answer_url_bundle.json`` for every endpoint system that can have one.

    Returns:
        system -> ``{"file": uri, "runs": n, "left_out": {...}}``, or ``{"skipped": reason}``.
    """
    summary: dict[str, dict[str, Any]] = {}
    for system in systems:
        if not isinstance(system, EndpointSystem):
            continue
        problems = metadata_problems(system)
        runs, left_out = bundle_runs(answers, citations, system.name)
        if problems:
            summary[system.name] = {"skipped": f"system definition lacks {', '.join(problems)}"}
            continue
        if not runs:
            summary[system.name] = {"skipped": "no answered query with a cited URL", "left_out": left_out}
            continue
        name = f"{BUNDLE_FOLDER}/{safe_file_name(system.name)}.answer_url_bundle.json"
        text = json.dumps(answer_bundle(system, runs), indent=2, ensure_ascii=False)
        store.write_bytes(name, text.encode("utf-8"))
        summary[system.name] = {"file": store.uri_of(name), "runs": len(runs), "left_out": left_out}
    return summary
