"""Arrow schemas of the tables the jobs layer owns: queries, citations, per-source scores.

Bump the version of a schema on any change to its columns.
"""

from __future__ import annotations

import pyarrow as pa

from judge.rubric import DIMENSION_KEYS

QUERIES_SCHEMA_VERSION = 1
CITATIONS_SCHEMA_VERSION = 1
SOURCE_SCORES_SCHEMA_VERSION = 1

#: The five SourceBench query intents (official ``query_type`` values).
QUERY_TYPES = ("VACOS", "DebateQA", "HotpotQA", "Pinocchios", "QuoraQuestions")

QUERIES_SCHEMA = pa.schema(
    [
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("query", pa.string(), nullable=False),
        pa.field("query_type", pa.string(), nullable=False),
        pa.field("language", pa.string()),  # ISO 639-1, null when unknown
    ],
    metadata={"schema": "queries", "version": str(QUERIES_SCHEMA_VERSION)},
)

CITATIONS_SCHEMA = pa.schema(
    [
        pa.field("system", pa.string(), nullable=False),  # system under test (model / engine name)
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("url", pa.string(), nullable=False),  # as cited
        pa.field("rank", pa.int32(), nullable=False),  # 1-based position in the system's citations
        pa.field("query_text", pa.string()),
        pa.field("answer_text", pa.string()),
        pa.field("language", pa.string()),
        pa.field("agg_source_id", pa.string()),  # kept from official scraped/enriched JSON imports
        pa.field("selected_topk", pa.bool_()),  # official top-k selection flag (null: not given)
    ],
    metadata={"schema": "citations", "version": str(CITATIONS_SCHEMA_VERSION)},
)

#: One row per (system, query, source): the reduce's input. Scores are float64 so that the
#: official policy's "numeric strings accepted, anything else missing" maps to null.
SOURCE_SCORES_SCHEMA = pa.schema(
    [
        pa.field("model_name", pa.string(), nullable=False),
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("query_type", pa.string(), nullable=False),
        pa.field("agg_source_id", pa.string()),
        pa.field("source_url", pa.string()),
        pa.field("text_content_length", pa.float64()),
        pa.field("language", pa.string()),
        *[pa.field(key, pa.float64()) for key in DIMENSION_KEYS],
    ],
    metadata={"schema": "source_scores", "version": str(SOURCE_SCORES_SCHEMA_VERSION)},
)
