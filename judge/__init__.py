"""The SourceBench judge: three-stage rubric scoring of cited pages with vLLM, an endpoint, or CPU signals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.lazy import lazy_exports

#: public name -> the module that defines it (imported on first use, PEP 562: importing the package
#: stays cheap, so `sourcebench --help` does not load every dependency).
_HOMES = {
    "JudgeConfig": "judge.config",
    "OpenAIConfig": "judge.config",
    "PromptConfig": "judge.config",
    "SamplingConfig": "judge.config",
    "SignalsConfig": "judge.config",
    "VLLMConfig": "judge.config",
    "JudgeEngine": "judge.engines",
    "make_engine": "judge.engines",
    "judge_pairs": "judge.pairs",
    "page_ids": "judge.pairs",
    "RequestSource": "judge.plan",
    "page_index": "judge.run",
    "DIMENSION_KEYS": "judge.rubric",
    "DIMENSIONS": "judge.rubric",
    "RUBRIC_VERSION": "judge.rubric",
    "STAGES": "judge.rubric",
    "WEIGHTED_SCALE": "judge.rubric",
    "WEIGHTS": "judge.rubric",
    "accounting": "judge.run",
    "judge_run": "judge.run",
    "judgment_key": "judge.run",
    "judgments_dataset": "judge.run",
    "read_judgments": "judge.run",
    "CONTENT_VECTORS_SCHEMA": "judge.schema",
    "JUDGMENT_SCHEMA": "judge.schema",
    "JUDGMENT_STATUSES": "judge.schema",
    "content_vectors": "judge.vectors",
}

__all__ = [
    "CONTENT_VECTORS_SCHEMA",
    "DIMENSIONS",
    "DIMENSION_KEYS",
    "JUDGMENT_SCHEMA",
    "JUDGMENT_STATUSES",
    "RUBRIC_VERSION",
    "STAGES",
    "WEIGHTED_SCALE",
    "WEIGHTS",
    "JudgeConfig",
    "JudgeEngine",
    "OpenAIConfig",
    "PromptConfig",
    "RequestSource",
    "SamplingConfig",
    "SignalsConfig",
    "VLLMConfig",
    "accounting",
    "content_vectors",
    "judge_pairs",
    "judge_run",
    "judgment_key",
    "judgments_dataset",
    "make_engine",
    "page_ids",
    "page_index",
    "read_judgments",
]

if TYPE_CHECKING:
    from judge.config import (
        JudgeConfig,
        OpenAIConfig,
        PromptConfig,
        SamplingConfig,
        SignalsConfig,
        VLLMConfig,
    )
    from judge.engines import JudgeEngine, make_engine
    from judge.pairs import judge_pairs, page_ids
    from judge.plan import RequestSource
    from judge.rubric import DIMENSION_KEYS, DIMENSIONS, RUBRIC_VERSION, STAGES, WEIGHTED_SCALE, WEIGHTS
    from judge.run import accounting, judge_run, judgment_key, judgments_dataset, page_index, read_judgments
    from judge.schema import CONTENT_VECTORS_SCHEMA, JUDGMENT_SCHEMA, JUDGMENT_STATUSES
    from judge.vectors import content_vectors


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
