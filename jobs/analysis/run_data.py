"""Load what the report needs from a run directory (local or S3), every table but one optional.

Only ``leaderboard/source_metrics`` is required. Page and judgment tables are read with a column
projection (never the page text or raw model output), so a report over millions of pages reads
little more than the status and token columns.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow.dataset as ds

from crawler.base import InputError, RunStore
from crawler.layout import LAYOUT

PAGE_COLUMNS = (
    "url_key", "url", "status", "error", "http_status", "rendered", "content_type", "domain", "manipulation",
)  # fmt: skip
JUDGMENT_COLUMNS = (
    "url_key",
    "query_id",
    "stage",
    "status",
    "engine",
    "model",
    "rubric_version",
    "prompt_layout",
    "prompt_tokens",
    "cached_prompt_tokens",
    "output_tokens",
    "truncated_chars",
    "latency_s",
)


@dataclass
class RunData:
    """The tables of one run, as pandas frames; None where the run lacks them."""

    uri: str
    """The run's URI."""
    sources: pd.DataFrame
    """``leaderboard/source_metrics``: one row per cited source with its scores; under the reduce's
    ``complete`` policy only the complete sources, the ones its aggregates count."""
    policy: str = "official"
    """The reduce policy recorded in ``leaderboard_data.json`` (``official`` or ``complete``)."""
    overall: pd.DataFrame | None = None
    """``leaderboard/leaderboard_overall`` (the official overall table, maybe with interval columns)."""
    by_query_type: pd.DataFrame | None = None
    """``leaderboard/leaderboard_by_query_type``."""
    manifest: dict[str, Any] | None = None
    """``manifest.json``: configuration, code version, counts, timings."""
    citations: pd.DataFrame | None = None
    """``inputs/citations.parquet`` (``jobs.schemas.CITATIONS_SCHEMA``)."""
    queries: pd.DataFrame | None = None
    """``inputs/queries.parquet``."""
    collect_manifest: dict[str, Any] | None = None
    """``collect/manifest.json`` of ``sourcebench collect``: the system definitions (kind, model, search)."""
    pages: pd.DataFrame | None = None
    """``pages/*.parquet`` restricted to ``PAGE_COLUMNS``."""
    judgments: pd.DataFrame | None = None
    """``judgments/*.parquet`` restricted to ``JUDGMENT_COLUMNS``."""
    calibration_gate: pd.DataFrame | None = None
    """``calibration/gate.csv`` written by ``sourcebench calibrate`` on this run, if it ran."""
    calibration_agreement: pd.DataFrame | None = None
    """``calibration/agreement.csv`` (judge vs human, annotators, judge configurations)."""
    missing: list[str] = field(default_factory=list)
    """Relative paths of the optional inputs the run does not have."""

    @property
    def name(self) -> str:
        return posixpath.basename(self.uri.rstrip("/")) or self.uri


def read_frame(store: RunStore, relpath: str, columns: tuple[str, ...] | None = None) -> pd.DataFrame | None:
    """A Parquet file or folder of parts as a DataFrame (only ``columns`` that exist); None if absent."""
    if not store.exists(relpath):
        return None
    dataset = ds.dataset(store.path(relpath), filesystem=store.fs, format="parquet")
    names = dataset.schema.names
    wanted = [c for c in columns if c in names] if columns else names
    return dataset.to_table(columns=wanted).to_pandas()


def _leaderboard_table(store: RunStore, name: str) -> pd.DataFrame | None:
    """``leaderboard/<name>.parquet`` if present, else the CSV twin."""
    frame = read_frame(store, LAYOUT.leaderboard_file(f"{name}.parquet"))
    if frame is None:
        frame = read_csv(store, LAYOUT.leaderboard_file(f"{name}.csv"))
    if frame is not None and "query_id" in frame:
        frame["query_id"] = frame["query_id"].astype(str)
    return frame


def reduce_policy(store: RunStore) -> str:
    """``official`` unless the reduce recorded another policy in ``leaderboard_data.json``."""
    relpath = LAYOUT.leaderboard_file(LAYOUT.leaderboard_data)
    if not store.exists(relpath):
        return "official"
    metadata = store.read_json(relpath).get("metadata") or {}
    return str(metadata.get("policy") or "official")


def read_csv(store: RunStore, relpath: str) -> pd.DataFrame | None:
    """A CSV of the run as a DataFrame; None if absent."""
    if not store.exists(relpath):
        return None
    with store.fs.open_input_stream(store.path(relpath)) as src:
        return pd.read_csv(src, dtype={"query_id": str})


def load_run(run_uri: str) -> RunData:
    """Read a run for the report.

    Raises:
        InputError: the run has no ``leaderboard/source_metrics`` (run the reduce first).
    """
    store = RunStore(run_uri)
    sources = _leaderboard_table(store, LAYOUT.source_metrics)
    if sources is None:
        raise InputError(
            store.uri_of(LAYOUT.source_metrics_table),
            "no source_metrics (.parquet or .csv): run `sourcebench reduce` on this run first",
        )
    data = RunData(uri=run_uri, sources=sources, policy=reduce_policy(store))
    if data.policy == "complete" and "score_complete" in sources:
        data.sources = sources[sources["score_complete"].astype(bool)].reset_index(drop=True)
    data.overall = _leaderboard_table(store, LAYOUT.leaderboard_overall)
    data.by_query_type = _leaderboard_table(store, LAYOUT.leaderboard_by_query_type)
    data.manifest = store.read_json_if_present(LAYOUT.manifest)
    data.collect_manifest = store.read_json_if_present(LAYOUT.collect_manifest)
    data.citations = read_frame(store, LAYOUT.citations)
    data.queries = read_frame(store, LAYOUT.queries)
    data.pages = read_frame(store, LAYOUT.pages, PAGE_COLUMNS)
    data.judgments = read_frame(store, LAYOUT.judgments, JUDGMENT_COLUMNS)
    data.calibration_gate = read_csv(store, LAYOUT.calibration_file(LAYOUT.calibration_gate))
    data.calibration_agreement = read_csv(store, LAYOUT.calibration_file(LAYOUT.calibration_agreement))
    optional = {
        LAYOUT.leaderboard_file(LAYOUT.leaderboard_overall): data.overall,
        LAYOUT.manifest: data.manifest,
        LAYOUT.citations: data.citations,
        f"{LAYOUT.pages}/": data.pages,
        f"{LAYOUT.judgments}/": data.judgments,
    }
    data.missing = [name for name, value in optional.items() if value is None]
    return data
