"""docs/contracts.md lists every column of every table schema (so the docs stay true to the code)."""

from pathlib import Path

import pytest

from crawler.schema import PAGE_SCHEMA, SIGNALS_TYPE
from jobs.leaderboard.metrics import SOURCE_METRICS_SCHEMA
from jobs.schemas import CITATIONS_SCHEMA, QUERIES_SCHEMA, SOURCE_SCORES_SCHEMA
from jobs.scoring import SCORED_SOURCES_SCHEMA, SELECTED_SOURCES_SCHEMA
from judge.schema import CONTENT_VECTORS_SCHEMA, JUDGMENT_SCHEMA

DOC = (Path(__file__).resolve().parents[1] / "docs" / "contracts.md").read_text()
SCHEMAS = [
    QUERIES_SCHEMA,
    CITATIONS_SCHEMA,
    PAGE_SCHEMA,
    JUDGMENT_SCHEMA,
    CONTENT_VECTORS_SCHEMA,
    SELECTED_SOURCES_SCHEMA,
    SOURCE_SCORES_SCHEMA,
    SCORED_SOURCES_SCHEMA,
    SOURCE_METRICS_SCHEMA,
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.metadata[b"schema"].decode())
def test_every_column_documented(schema):
    assert b"version" in schema.metadata
    missing = [f.name for f in schema if f"`{f.name}`" not in DOC]
    assert not missing, f"undocumented columns in docs/contracts.md: {missing}"


def test_signals_documented():
    missing = [f.name for f in SIGNALS_TYPE if f"`{f.name}`" not in DOC]
    assert not missing
