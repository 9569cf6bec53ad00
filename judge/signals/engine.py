"""The signals judge: all eight dimensions on CPU without an LLM, deterministically.

It answers in the same JSON as an LLM judge, so its output goes through the same validation.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Iterator, Sequence

from judge.config import JudgeConfig
from judge.engines.base import Completion, Judged, PromptStage, outcome_of
from judge.packet import PagePacket, StageRequest
from judge.signals import features
from judge.signals.authority import DomainAuthority
from judge.signals.relevance import EmbeddingRelevance, band_score, term_coverage

#: Bump when any rule changes: it is part of every signals judgment's cache key.
SIGNALS_VERSION = "signals-2"


@functools.lru_cache(maxsize=4)
def _authority(path) -> DomainAuthority:
    return DomainAuthority.from_csv(path)


@functools.lru_cache(maxsize=2)
def _embedder(model_dir) -> EmbeddingRelevance:
    return EmbeddingRelevance(model_dir)


def _set_threads(threads: int | None) -> None:
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


def embedded_text(page: PagePacket) -> str:
    """The text the relevance signal reads (embeds, in passages): the main content, else the judged text."""
    return page.text_main or page.text


def _host(request: StageRequest) -> str:
    from urllib.parse import urlsplit

    return (urlsplit(request.page.url).hostname or request.page.domain or "").lower()


class SignalsJudge:
    """Scores requests from page metadata, crawler signals and text features."""

    name = "signals"

    def __init__(self, config: JudgeConfig):
        self.config = config
        self.authority = _authority(config.signals.domain_list)
        with open(config.signals.domain_list, "rb") as handle:
            self._list_hash = hashlib.sha256(handle.read()).hexdigest()[:12]
        if config.signals.relevance == "embedding":
            _set_threads(config.signals.threads)

    @property
    def model(self) -> str:
        return f"{SIGNALS_VERSION}/{self.config.signals.relevance}"

    @property
    def prompt_layout(self) -> None:
        return None

    def prompt_stage(self) -> PromptStage | None:
        return None

    def judge(self, requests: Sequence[StageRequest]) -> Iterator[Judged]:
        """Outcomes of the requests: the rules' JSON answers, validated like an LLM's."""
        by_key = {r.judgment_key: r for r in requests}
        for completion in self.score(requests):
            request = by_key[completion.key]
            yield Judged(request, outcome_of(completion, request.stage))

    def prompt_version(self, stage: str) -> str:
        return f"{SIGNALS_VERSION}:list-{self._list_hash}"

    def identity(self, stage: str) -> dict:
        """Everything besides the page and query that decides a stage's output (for the cache key)."""
        ident = {"engine": self.name, "version": SIGNALS_VERSION, "list": self._list_hash}
        if stage == "content":
            ident["relevance"] = self.config.signals.relevance
        if stage == "meta":
            ident["today"] = self.config.prompts.today.isoformat()
        return ident

    def _relevance(self, requests: Sequence[StageRequest]) -> dict[str, tuple[int, str]]:
        content = [r for r in requests if r.stage == "content"]
        if not content:
            return {}
        texts = [embedded_text(r.page) for r in content]
        coverage = [term_coverage(r.query_text, t) for r, t in zip(content, texts, strict=True)]
        if self.config.signals.relevance == "embedding":
            model = _embedder(self.config.signals.embedding_model)
            sims = model.similarities([(r.query_text, t) for r, t in zip(content, texts, strict=True)])
        else:
            sims = [None] * len(content)
        out = {}
        for r, text, cov, sim in zip(content, texts, coverage, sims, strict=True):
            if sim is None:
                score = 5 if cov >= 0.9 else 4 if cov >= 0.7 else 3 if cov >= 0.5 else 2 if cov > 0 else 1
                why = f"{cov:.0%} of the query's terms appear in the page."
            else:
                score = band_score(sim)
                why = f"Best passage similarity to the query {sim:.2f}; {cov:.0%} of query terms present."
            if len(text) < 300 and score > 2:
                score, why = 2, why + f" Very short text ({len(text)} characters)."
            out[r.judgment_key] = (score, why)
        return out

    def score(self, requests: Sequence[StageRequest]) -> Iterator[Completion]:
        """One JSON answer per request (same format as the LLM stages)."""
        start = time.perf_counter()
        relevance = self._relevance(requests)
        today = self.config.prompts.today
        for r in requests:
            page = r.page
            if r.stage == "content":
                authority = self.authority.score(_host(r)).score
                answer = {
                    "semantic_relevance": relevance[r.judgment_key],
                    "factual_accuracy": features.factual_support(page, authority),
                    "objectivity_tone": features.objectivity(page),
                }
            elif r.stage == "meta":
                host = _host(r)
                auth = self.authority.score(host)
                answer = {
                    "freshness": features.freshness(page, today),
                    "accountability": features.accountability(page),
                    "transparency": features.transparency(page),
                    "authority": (auth.score, auth.justification(host)),
                }
            else:
                answer = {"layout_ad_density": features.layout(page)}
            answer = {key: features.penalise(page, key, value) for key, value in answer.items()}
            text = json.dumps({k: {"justification": j, "score": s} for k, (s, j) in answer.items()})
            elapsed = time.perf_counter() - start
            start = time.perf_counter()
            yield Completion(r.judgment_key, text, latency_s=elapsed)
