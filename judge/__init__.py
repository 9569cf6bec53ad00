"""The SourceBench judge: three-stage rubric scoring of cited pages with vLLM, an endpoint, or CPU signals."""

from judge.config import JudgeConfig, OpenAIConfig, PromptConfig, SamplingConfig, SignalsConfig, VLLMConfig
from judge.engines import make_engine
from judge.rubric import DIMENSION_KEYS, DIMENSIONS, RUBRIC_VERSION, STAGES, WEIGHTED_SCALE, WEIGHTS
from judge.run import accounting, judge_run, judgment_key, read_judgments
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
    "OpenAIConfig",
    "PromptConfig",
    "SamplingConfig",
    "SignalsConfig",
    "VLLMConfig",
    "accounting",
    "build_tiny_qwen2",
    "content_vectors",
    "judge_run",
    "judgment_key",
    "make_engine",
    "read_judgments",
]
