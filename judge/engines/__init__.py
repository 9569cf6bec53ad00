"""Judge engines behind one interface: ``signals`` (CPU rules), ``openai`` (HTTP), ``vllm`` (Ray Data LLM)."""

from __future__ import annotations

from judge.config import JudgeConfig
from judge.engines.base import Completion, Judged, JudgeEngine, Outcome, Prompt, PromptStage
from judge.engines.llm import LLMEngine


def make_engine(config: JudgeConfig) -> JudgeEngine:
    """The engine the config names (imports only what that engine needs)."""
    if config.engine == "signals":
        from judge.signals import SignalsJudge

        return SignalsJudge(config)
    if config.engine == "openai":
        from judge.engines.openai_http import OpenAIEngine

        return OpenAIEngine(config)
    from judge.engines.vllm_ray import VLLMEngine

    return VLLMEngine(config)


__all__ = [
    "Completion",
    "JudgeEngine",
    "Judged",
    "LLMEngine",
    "Outcome",
    "Prompt",
    "PromptStage",
    "make_engine",
]
