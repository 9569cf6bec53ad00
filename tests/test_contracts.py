"""docs/contracts.md lists every column of every table schema and every folder of the run layout (so
the docs stay true to the code)."""

from dataclasses import fields
from pathlib import Path

import pytest

from crawler.layout import LAYOUT
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


def test_run_layout_documented():
    layout = DOC.split("## Run layout", 1)[1].split("\n## ", 1)[0]
    names = [getattr(LAYOUT, f.name) for f in fields(LAYOUT)]
    derived = [LAYOUT.crawl_manifest, LAYOUT.crawl_hosts, LAYOUT.crawl_summary, LAYOUT.crawl_settings,
               LAYOUT.source_scores, LAYOUT.coverage, LAYOUT.crawl_pacing("<shard>")]  # fmt: skip
    missing = [name for name in names + derived if f"`{name}" not in layout]
    assert not missing, f"run paths missing from docs/contracts.md's run layout: {missing}"
