"""What the two LLM engines (vLLM and OpenAI-compatible) share: identity, prompts, token counting."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from judge.config import JudgeConfig
from judge.engines.base import Completion, Judged, Prompt, PromptStage, parse_with_repair
from judge.packet import StageRequest
from judge.prompts import RenderedPrompt, TokenCounter, estimate_counter, render, stage_prompt_version
from judge.rubric import RUBRIC_VERSION


class LLMEngine:
    """Base of LLM engines; subclasses implement ``generate`` and may provide a real tokenizer."""

    name = "llm"

    def __init__(self, config: JudgeConfig):
        self.config = config

    @property
    def model(self) -> str:
        return self.config.model_name

    @property
    def prompt_layout(self) -> str:
        return self.config.prompts.layout

    def prompt_version(self, stage: str) -> str:
        return stage_prompt_version(self.config.prompts, stage)

    def identity(self, stage: str) -> dict:
        """Everything besides the page and query that decides a stage's prompt and answer."""
        p = self.config.prompts
        ident = {
            "engine": self.name,
            "model": self.model,
            "sampling": self.config.sampling.model_dump(),
            "rubric": RUBRIC_VERSION,
            "prompt": self.prompt_version(stage),
            "layout": p.layout,
            "budget": [p.token_budget, p.truncation, p.text_field, p.justification_max_chars],
        }
        if stage == "meta":
            ident["today"] = p.today.isoformat()
        return ident

    def token_counter(self) -> TokenCounter:
        """Counts prompt tokens for the budget; an estimate unless the subclass has the tokenizer."""
        return estimate_counter(self.config.prompts.chars_per_token)

    def render_all(self, requests: Sequence[StageRequest]) -> dict[str, RenderedPrompt]:
        count = self.token_counter()
        return {r.judgment_key: render(r, self.config.prompts, count) for r in requests}

    def generate(self, prompts: list[Prompt]) -> Iterable[Completion]:
        raise NotImplementedError

    def prompt_stage(self) -> PromptStage | None:
        return None

    def judge(self, requests: Sequence[StageRequest]) -> Iterator[Judged]:
        """Outcomes for the requests (in completion order), re-asked where the JSON was invalid."""
        rendered = self.render_all(requests)
        by_key = {r.judgment_key: r for r in requests}
        prompts = [
            Prompt(r.judgment_key, rendered[r.judgment_key].messages, rendered[r.judgment_key].json_schema)
            for r in requests
        ]
        stage_of = {r.judgment_key: r.stage for r in requests}
        for outcome in parse_with_repair(prompts, stage_of, self.generate, self.config.repair_retries):
            key = outcome.completion.key
            yield Judged(by_key[key], outcome, rendered[key].truncated_chars)
