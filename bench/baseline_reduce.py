"""Baseline for bench/reduce.py: a reduce written the way the official compute_metrics.py works.

Loads each enriched JSON whole with ``json.load``, builds one Python dict per source, groups them in
lists and averages in Python loops, then writes the CSV files with ``csv.DictWriter``. Our own code
(not the official file), kept equivalent in work done so that the comparison is fair.

Usage: python bench/baseline_reduce.py OUT_DIR NAME=PATH [NAME=PATH ...]
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

KEYS = [
    "semantic_relevance",
    "factual_accuracy",
    "freshness",
    "objectivity_tone",
    "layout_ad_density",
    "accountability",
    "transparency",
    "authority",
]
WEIGHTS = {
    key: (3 if key in ("semantic_relevance", "factual_accuracy", "objectivity_tone") else 2) for key in KEYS
}


def number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def average(values):
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def load(path: str, model: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    records = []
    for query in data:
        for source in query.get("aggregated_sources") or []:
            vector = source.get("content_vector")
            if not isinstance(vector, dict):
                continue
            scores = {key: number(vector.get(key)) for key in KEYS}
            records.append(
                {
                    "model_name": model,
                    "query_id": query["query_id"],
                    "query_type": query.get("query_type", "Unknown"),
                    "agg_source_id": source.get("agg_source_id"),
                    "source_url": source.get("url_canonical", ""),
                    "scores": scores,
                    "unweighted_mean_score": average(scores.values()),
                    "weighted_total_content_score": sum((scores[k] or 0.0) * WEIGHTS[k] for k in KEYS)
                    * 100
                    / 95,
                    "score_complete": all(v is not None for v in scores.values()),
                }
            )
    return records


def group(records: list[dict], keys: list[str]) -> list[dict]:
    groups = defaultdict(list)
    for record in records:
        groups[tuple(record[k] for k in keys)].append(record)
    rows = []
    for key, members in groups.items():
        row = dict(zip(keys, key, strict=True))
        row["num_sources"] = len(members)
        row["num_queries"] = len({m["query_id"] for m in members})
        row["num_complete_scores"] = sum(m["score_complete"] for m in members)
        row["unweighted_mean_score"] = average(m["unweighted_mean_score"] for m in members)
        row["weighted_total_content_score"] = average(m["weighted_total_content_score"] for m in members)
        for k in KEYS:
            row[k] = average(m["scores"][k] for m in members)
        rows.append(row)
    return sorted(rows, key=lambda r: -r["weighted_total_content_score"])


def write(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    records = []
    for spec in sys.argv[2:]:
        name, path = spec.split("=", 1)
        records.extend(load(path, name))
    sources = [{**{k: r[k] for k in r if k != "scores"}, **r["scores"]} for r in records]
    write(out / "source_metrics.csv", sources)
    write(out / "query_metrics.csv", group(records, ["model_name", "query_id", "query_type"]))
    write(out / "leaderboard_overall.csv", group(records, ["model_name"]))
    write(out / "leaderboard_by_query_type.csv", group(records, ["model_name", "query_type"]))


if __name__ == "__main__":
    main()
