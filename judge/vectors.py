"""Judgments to content vectors: one row per (page, query) with the eight scores and justifications."""

from __future__ import annotations

import pyarrow as pa

from judge.rubric import DIMENSION_KEYS, STAGES, stage_dimensions
from judge.schema import CONTENT_VECTORS_SCHEMA

#: When stages disagree, the vector's status is the first of these that any stage has.
_STATUS_PRECEDENCE = ("skipped", "error", "unscorable")


def content_vectors(judgments: pa.Table) -> pa.Table:
    """Pivot judgments (JUDGMENT_SCHEMA) to CONTENT_VECTORS_SCHEMA.

    The newest row (``judged_at``) of each (url_key, query_id, stage) wins, so a rescore replaces the
    stages it recomputed. Scores are float64, null where a stage is not scored. ``judge_status`` is
    ``scored`` when all three stages are scored, ``partial`` when some stage has no row yet, else
    the first of skipped / error / unscorable that a stage has.
    """
    latest: dict[tuple[str, str, str], dict] = {}
    for row in judgments.sort_by([("judged_at", "ascending")]).to_pylist():
        latest[(row["url_key"], row["query_id"], row["stage"])] = row
    pairs = sorted({(u, q) for u, q, _ in latest})
    out = []
    for url_key, query_id in pairs:
        vector: dict = {"url_key": url_key, "query_id": query_id}
        vector.update({k: None for k in DIMENSION_KEYS})
        vector.update({f"{k}_justification": None for k in DIMENSION_KEYS})
        statuses = []
        for stage in STAGES:
            row = latest.get((url_key, query_id, stage))
            statuses.append(row["status"] if row else None)
            if not row or row["status"] != "scored":
                continue
            scores = {s["dimension"]: s for s in row["scores"]}
            for dim in stage_dimensions(stage):
                entry = scores.get(dim.key)
                if entry and entry["score"] is not None:
                    vector[dim.key] = float(entry["score"])
                    vector[f"{dim.key}_justification"] = entry["justification"]
        if all(s == "scored" for s in statuses):
            status = "scored"
        else:
            status = next((s for s in _STATUS_PRECEDENCE if s in statuses), "partial")
        vector["judge_status"] = status
        out.append(vector)
    return pa.Table.from_pylist(out, schema=CONTENT_VECTORS_SCHEMA)
