"""Arrow schema of a judgment: one row per (page, query, stage) request to a judge.

Owned by the judge; the reduce reads it. Bump ``JUDGMENT_SCHEMA_VERSION`` on any change.
"""

from __future__ import annotations

import pyarrow as pa

from judge.rubric import DIMENSION_KEYS

JUDGMENT_SCHEMA_VERSION = 2

#: Terminal statuses of a judgment. A failed judgment is a row with status != "scored", never a default score.
JUDGMENT_STATUSES = ("scored", "unscorable", "error", "skipped")

JUDGMENT_SCHEMA = pa.schema(
    [
        pa.field(
            "judgment_key", pa.string(), nullable=False
        ),  # cache key (content hash, query, stage, versions)
        pa.field("url_key", pa.string(), nullable=False),
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),  # content | meta | layout
        pa.field("status", pa.string(), nullable=False),  # one of JUDGMENT_STATUSES
        pa.field("error", pa.string()),
        # One entry per dimension of the stage: {dimension, score (1-5 or null), justification}.
        pa.field(
            "scores",
            pa.list_(
                pa.struct(
                    [
                        pa.field("dimension", pa.string()),
                        pa.field("score", pa.int8()),
                        pa.field("justification", pa.string()),
                    ]
                )
            ),
        ),
        pa.field("raw_output", pa.string()),  # kept for unscorable rows and audits
        pa.field("engine", pa.string()),  # vllm | openai | signals
        pa.field("model", pa.string()),
        pa.field("rubric_version", pa.string()),
        pa.field("prompt_layout", pa.string()),  # paper | shared
        pa.field("prompt_version", pa.string()),  # "<label>:<hash of the stage's fixed prompt text>"
        pa.field("prompt_tokens", pa.int64()),
        pa.field("cached_prompt_tokens", pa.int64()),
        pa.field("output_tokens", pa.int64()),
        pa.field("truncated_chars", pa.int64()),  # page characters dropped to fit the token budget
        pa.field("latency_s", pa.float64()),
        pa.field("judged_at", pa.timestamp("us", tz="UTC")),
    ],
    metadata={"schema": "judgment", "version": str(JUDGMENT_SCHEMA_VERSION)},
)

CONTENT_VECTORS_SCHEMA_VERSION = 1

#: One row per (url_key, query_id): the 8 scores (null where not scored), their justifications, and
#: ``judge_status`` ("scored" when all three stages scored, else the worst stage status).
CONTENT_VECTORS_SCHEMA = pa.schema(
    [
        pa.field("url_key", pa.string(), nullable=False),
        pa.field("query_id", pa.string(), nullable=False),
        *[pa.field(key, pa.float64()) for key in DIMENSION_KEYS],
        *[pa.field(f"{key}_justification", pa.string()) for key in DIMENSION_KEYS],
        pa.field("judge_status", pa.string(), nullable=False),
    ],
    metadata={"schema": "content_vectors", "version": str(CONTENT_VECTORS_SCHEMA_VERSION)},
)
