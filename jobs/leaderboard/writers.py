"""Writers for the six official leaderboard files (same columns and text as ``compute_metrics.py``).

CSV cells are written by Python's ``csv`` module, as the official script does, so numbers have the
same text (``3.0``, ``84.21052631578948``), missing values are empty and booleans are ``True``/``False``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from crawler.storage import RunStore
from judge.rubric import DIMENSION_KEYS, WEIGHTED_SCALE, WEIGHTS

MAIN_TABLE_COLUMNS = (
    "model_name",
    "query_type",
    "unweighted_mean_score",
    "weighted_total_content_score",
    "num_sources",
    "num_queries",
)


class StreamingCsv:
    """Writes CSV rows batch by batch into an open binary file."""

    def __init__(self, binary: io.BufferedWriter, columns: Sequence[str]):
        self.text = io.TextIOWrapper(binary, encoding="utf-8", newline="", write_through=False)
        self.writer = csv.writer(self.text)
        self.writer.writerow(columns)
        self.columns = columns

    def write_table(self, table: pa.Table) -> None:
        self.writer.writerows(zip(*(table.column(c).to_pylist() for c in self.columns), strict=True))

    def close(self) -> None:
        self.text.flush()
        self.text.detach()


def rows_to_csv(rows: list[dict[str, Any]]) -> str:
    """The official ``write_csv_file``: header from the union of keys; an empty list gives an empty file."""
    if not rows:
        return ""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def json_query_id(value: Any) -> Any:
    """The official JSON keeps digit-only query ids as numbers."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def main_table(by_query_type: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{name: row[name] for name in MAIN_TABLE_COLUMNS} for row in by_query_type]


def leaderboard_payload(
    runs: Iterable[dict[str, Any]],
    results: dict[str, list[dict[str, Any]]],
    extra_metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The official ``leaderboard_data.json`` payload (plus our metadata under extra keys)."""
    queries = [{**row, "query_id": json_query_id(row["query_id"])} for row in results["queries"]]
    metadata = {
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "scoring_dimensions": list(DIMENSION_KEYS),
        "weighted_score_formula": {"weights": dict(WEIGHTS), "scale_factor": WEIGHTED_SCALE},
        "runs": list(runs),
        **(extra_metadata or {}),
    }
    return {
        "metadata": metadata,
        "overall": results["overall"],
        "by_query_type": results["by_query_type"],
        "queries": queries,
    }


def write_leaderboard_files(
    store: RunStore,
    results: dict[str, list[dict[str, Any]]],
    payload: dict[str, Any],
) -> list[str]:
    """Write the five aggregate files (CSV + JSON) and their Parquet twins; returns the names written."""
    tables = {
        "query_metrics": results["queries"],
        "leaderboard_overall": results["overall"],
        "leaderboard_by_query_type": results["by_query_type"],
        "main_table": main_table(results["by_query_type"]),
    }
    written = []
    for name, rows in tables.items():
        store.write_text(f"{name}.csv", rows_to_csv(rows))
        written.append(f"{name}.csv")
        if rows:
            store.write_table(f"{name}.parquet", pa.Table.from_pylist(rows))
            written.append(f"{name}.parquet")
    store.write_bytes("leaderboard_data.json", json.dumps(payload, indent=2, ensure_ascii=False).encode())
    return [*written, "leaderboard_data.json"]
