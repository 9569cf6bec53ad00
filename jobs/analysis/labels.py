"""Readers for the label files the analyses take: human scores, answer correctness, system metadata.

All three are validated row by row; a bad value raises :class:`InputError` naming file, line, field.

* human labels CSV: ``query_id, url, annotator`` and one column per scored dimension (any subset of
  the 8 rubric keys, integers 1-5, blank = not rated), optionally ``<dimension>_justification``;
  ``annotator`` may be omitted for a single annotator.
* correctness CSV: ``system, query_id, correct`` with ``correct`` in 0/1, true/false, yes/no,
  correct/incorrect, or a fraction in [0, 1] (e.g. graded accuracy).
* system metadata: CSV ``system,<factor>,<factor>...`` or a JSON/YAML mapping
  ``{system: {factor: value}}`` (e.g. ``model``, ``retrieval_tool``) for ablation tables; without
  a file, the system definitions that ``sourcebench collect`` recorded in ``collect/manifest.json``.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import yaml

from crawler.base import InputError
from jobs.analysis.urls import canonical_url
from jobs.inputs import check_url, decode_utf8, iter_csv, normalize_query_id, read_input_bytes
from judge.rubric import DIMENSION_KEYS, SCORE_MAX, SCORE_MIN

_TRUE = {"1", "true", "yes", "correct", "y", "t"}
_FALSE = {"0", "false", "no", "incorrect", "n", "f"}


def _csv_text(path: str) -> str:
    return decode_utf8(path, read_input_bytes(path))


def _query_id(path: str, value: str, line: int) -> str:
    query_id = normalize_query_id(value)
    if query_id is None:
        raise InputError(path, "empty query_id", line=line, field="query_id")
    return query_id


def load_human_labels(path: str) -> pd.DataFrame:
    """Human rubric scores: one row per (annotator, query, page).

    Returns:
        ``annotator, query_id, url, url_canonical``, the rated dimension columns (float, NaN = not
        rated) and any ``<dimension>_justification`` columns.
    """
    text = _csv_text(path)
    rows: list[dict[str, object]] = []
    seen: dict[tuple[str, str, str], int] = {}
    dims: list[str] = []
    for line, row in iter_csv(path, text, ("query_id", "url")):
        if not dims:
            dims = [d for d in DIMENSION_KEYS if d in row]
            if not dims:
                raise InputError(
                    path, f"no dimension columns; expected some of {', '.join(DIMENSION_KEYS)}", line=1
                )
        record: dict[str, object] = {
            "annotator": (row.get("annotator") or "human").strip() or "human",
            "query_id": _query_id(path, row["query_id"], line),
            "url": check_url(path, row["url"], line=line, field="url"),
        }
        record["url_canonical"] = canonical_url(str(record["url"]))
        for dim in dims:
            record[dim] = _score(path, row.get(dim), line, dim)
            if f"{dim}_justification" in row:
                record[f"{dim}_justification"] = (row[f"{dim}_justification"] or "").strip() or None
        key = (str(record["annotator"]), str(record["query_id"]), str(record["url_canonical"]))
        if key in seen:
            raise InputError(
                path,
                f"duplicate label for annotator/query/url (first on line {seen[key]})",
                line=line,
                field="url",
            )
        seen[key] = line
        rows.append(record)
    if not rows:
        raise InputError(path, "no label rows")
    return pd.DataFrame(rows)


def _score(path: str, value: str | None, line: int, field: str) -> float:
    text = (value or "").strip()
    if not text:
        return float("nan")
    try:
        number = float(text)
    except ValueError:
        raise InputError(path, f"score {text!r} is not a number", line=line, field=field) from None
    if not number.is_integer() or not SCORE_MIN <= number <= SCORE_MAX:
        raise InputError(
            path, f"score {text} is not an integer {SCORE_MIN}-{SCORE_MAX}", line=line, field=field
        )
    return number


def load_correctness_labels(path: str) -> pd.DataFrame:
    """Answer-correctness labels: ``system, query_id, correct`` (float in [0, 1])."""
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for line, row in iter_csv(path, _csv_text(path), ("system", "query_id", "correct")):
        system = (row["system"] or "").strip()
        if not system:
            raise InputError(path, "empty system", line=line, field="system")
        query_id = _query_id(path, row["query_id"], line)
        raw = (row["correct"] or "").strip().lower()
        if raw in _TRUE:
            correct = 1.0
        elif raw in _FALSE:
            correct = 0.0
        else:
            try:
                correct = float(raw)
            except ValueError:
                correct = float("nan")
            if not 0.0 <= correct <= 1.0:
                raise InputError(
                    path,
                    f"{row['correct']!r} is not 0/1, true/false or a fraction in [0, 1]",
                    line=line,
                    field="correct",
                )
        if (system, query_id) in seen:
            raise InputError(
                path, f"duplicate system/query (first on line {seen[system, query_id]})", line=line
            )
        seen[system, query_id] = line
        rows.append({"system": system, "query_id": query_id, "correct": correct})
    return pd.DataFrame(rows, columns=["system", "query_id", "correct"])


def load_system_metadata(path: str) -> pd.DataFrame:
    """System factors for ablations: a ``system`` column plus one string column per factor."""
    text = _csv_text(path)
    if path.lower().endswith((".json", ".yaml", ".yml")):
        try:
            data = json.loads(text) if path.lower().endswith(".json") else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise InputError(path, f"cannot parse: {exc}") from None
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise InputError(path, "expected a mapping {system: {factor: value, ...}, ...}")
        frame = pd.DataFrame([{"system": str(name), **factors} for name, factors in data.items()])
    else:
        records = [row for _, row in iter_csv(path, text, ("system",))]
        frame = pd.DataFrame(records)
    if frame.empty or len(frame.columns) < 2:
        raise InputError(path, "need a system column and at least one factor column", field="system")
    duplicated = frame["system"][frame["system"].duplicated()]
    if not duplicated.empty:
        raise InputError(path, f"system {duplicated.iloc[0]!r} listed twice", field="system")
    return frame.astype(str)


#: Fields of a collect system definition that can be ablation factors.
COLLECT_FACTORS = ("model_name", "api", "web_search_mode", "web_search_tool")


def system_metadata_from_collect(manifest: dict[str, Any]) -> pd.DataFrame | None:
    """Factors of the endpoint systems a collect run defined (only those that vary between systems).

    ``web_search_tool`` is reduced to its ``type`` (e.g. ``web_search``). None when fewer than two
    endpoint systems or no factor varies.
    """
    rows = []
    for system in manifest.get("systems") or []:
        if not isinstance(system, dict) or system.get("kind", "endpoint") != "endpoint":
            continue
        row = {"system": str(system.get("name") or system.get("model_name"))}
        for factor in COLLECT_FACTORS:
            value = system.get(factor)
            if isinstance(value, dict):
                value = value.get("type") or json.dumps(value, sort_keys=True)
            row[factor] = "none" if value in (None, "", {}) else str(value)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if len(frame) < 2:
        return None
    varying = [f for f in COLLECT_FACTORS if frame[f].nunique() > 1]
    return frame[["system", *varying]] if varying else None


def serp_systems_from_collect(manifest: dict[str, Any]) -> list[str]:
    """Names of the ``kind: serp`` systems a collect run defined."""
    return [
        str(s["name"])
        for s in manifest.get("systems") or []
        if isinstance(s, dict) and s.get("kind") == "serp"
    ]
