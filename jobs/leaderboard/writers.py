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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crawler.base import RunStore
from crawler.layout import LAYOUT
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
    """Writes CSV rows batch by batch into an open binary file, formatted like Python's ``csv`` module."""

    def __init__(self, binary: io.BufferedWriter, columns: Sequence[str]):
        self.binary = binary
        self.columns = list(columns)
        header = io.StringIO(newline="")
        csv.writer(header).writerow(self.columns)
        binary.write(header.getvalue().encode("utf-8"))

    def write_bytes(self, rows: bytes) -> None:
        """Append rows already formatted by :func:`csv_rows` (e.g. in a Ray worker)."""
        self.binary.write(rows)

    def close(self) -> None:
        self.binary.flush()


#: Floats in this magnitude range print the same (shortest round-trip digits, no exponent) in Arrow
#: and in Python's ``repr``; others are formatted by ``repr`` itself.
_PLAIN_FLOAT_RANGE = (1e-4, 1e9)


def csv_cells(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One column as CSV cell text, exactly as ``csv.writer`` would write each Python value."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = column.type
    if pa.types.is_floating(kind):
        values = column.cast(pa.float64())
        magnitude = pc.abs(values)
        plain = pc.or_(
            pc.equal(magnitude, 0.0),
            pc.and_(
                pc.greater_equal(magnitude, _PLAIN_FLOAT_RANGE[0]), pc.less(magnitude, _PLAIN_FLOAT_RANGE[1])
            ),
        )
        text = values.cast(pa.string())
        needs_point = pc.invert(pc.match_substring(text, "."))  # plain-range values have no exponent
        text = pc.if_else(needs_point, pc.binary_join_element_wise(text, ".0", ""), text)
        odd = pc.and_(pc.is_valid(values), pc.invert(pc.fill_null(plain, True)))
        if pc.any(odd).as_py():
            python = pa.array([None if v is None else repr(v) for v in values.to_pylist()], pa.string())
            text = pc.if_else(odd, python, text)
        return pc.fill_null(text, "")
    if pa.types.is_boolean(kind):
        return pc.fill_null(pc.if_else(column, "True", "False"), "")
    if pa.types.is_integer(kind):
        return pc.fill_null(column.cast(pa.string()), "")
    text = pc.fill_null(column.cast(pa.string()), "")
    needs_quotes = pc.match_substring(text, ",")
    for special in ('"', "\r", "\n"):
        needs_quotes = pc.or_(needs_quotes, pc.match_substring(text, special))
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
    return pc.if_else(needs_quotes, quoted, text)


def csv_rows(table: pa.Table) -> bytes:
    """The CSV text (``\\r\\n`` line ends, as ``csv.writer``) of a table's rows."""
    cells = [csv_cells(table.column(i)) for i in range(table.num_columns)]
    cells = [cell.cast(pa.large_string()) for cell in cells]
    empty, comma, newline = (pa.scalar(text, pa.large_string()) for text in ("", ",", "\r\n"))
    lines = pc.binary_join_element_wise(pc.binary_join_element_wise(*cells, comma), empty, newline)
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset : lines.offset + len(lines) + 1]
    return lines.buffers()[2].to_pybytes()[offsets[0] : offsets[-1]]


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


def safe_file_name(system: str) -> str:
    """A system name as a file name (letters, digits, ``-_.``; anything else becomes ``_``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in system) or "system"


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
        LAYOUT.query_metrics: results["queries"],
        LAYOUT.leaderboard_overall: results["overall"],
        LAYOUT.leaderboard_by_query_type: results["by_query_type"],
        LAYOUT.main_table: main_table(results["by_query_type"]),
    }
    written = []
    for name, rows in tables.items():
        store.write_text(f"{name}.csv", rows_to_csv(rows))
        written.append(f"{name}.csv")
        if rows:
            store.write_table(f"{name}.parquet", pa.Table.from_pylist(rows))
            written.append(f"{name}.parquet")
    store.write_bytes(LAYOUT.leaderboard_data, json.dumps(payload, indent=2, ensure_ascii=False).encode())
    return [*written, LAYOUT.leaderboard_data]
