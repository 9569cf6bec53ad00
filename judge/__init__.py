"""The SourceBench judge: three-stage rubric scoring of cited pages with vLLM, an endpoint, or CPU signals."""

from judge.config import JudgeConfig, OpenAIConfig, PromptConfig, SamplingConfig, SignalsConfig, VLLMConfig
from judge.engines import JudgeEngine, make_engine
from judge.pairs import judge_pairs, page_ids
from judge.rubric import DIMENSION_KEYS, DIMENSIONS, RUBRIC_VERSION, STAGES, WEIGHTED_SCALE, WEIGHTS
from judge.run import accounting, judge_run, judgment_key, page_index, read_judgments
from judge.schema import CONTENT_VECTORS_SCHEMA, JUDGMENT_SCHEMA, JUDGMENT_STATUSES
from judge.tiny_model import build_tiny_qwen2
from judge.vectors import content_vectors

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
    "SamplingConfig",
    "SignalsConfig",
    "VLLMConfig",
    "accounting",
    "build_tiny_qwen2",
    "content_vectors",
    "judge_pairs",
    "judge_run",
    "judgment_key",
    "make_engine",
    "page_ids",
    "page_index",
    "read_judgments",
]
