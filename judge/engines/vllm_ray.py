"""Offline batch judging with vLLM through Ray Data LLM (``ray.data.llm``).

One pass builds a processor (engine actors pinned by accelerator type / placement bundles), streams
the rendered prompts through it in the order given (the run sorts them so that a page's stage
requests are adjacent, which is what the prefix cache needs) and returns one Completion per prompt
with the prompt, cached-prompt and output token counts vLLM measured.

Ray Data LLM drops vLLM's per-request ``num_cached_tokens`` from its output rows, so the engine
actors run a worker setup hook (``record_cached_tokens``) that copies it into the row's ``metrics``;
a row without it reports ``cached_prompt_tokens`` 0, so the hit rate can be under- but never over-stated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.config import JudgeConfig
from judge.engines.base import Completion, Prompt
from judge.engines.llm import LLMEngine
from judge.packet import StageRequest
from judge.prompts import TokenCounter

if TYPE_CHECKING:
    from ray.data import Dataset

_HOOK = "judge.engines.vllm_ray.record_cached_tokens"
#: How Ray passes a worker setup hook by module name (what ``runtime_env["worker_process_setup_hook"]``
#: becomes at job level; task- and actor-level runtime envs need the variable itself).
WORKER_PROCESS_SETUP_HOOK_ENV_VAR = "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"


def record_cached_tokens() -> None:
    """Worker setup hook: keep vLLM's ``num_cached_tokens`` in Ray Data LLM's output metrics."""
    from ray.llm._internal.batch.stages import vllm_engine_stage as stage

    original = stage.vLLMOutputData.from_vllm_engine_output.__func__
    if getattr(original, "_sb_patched", False):
        return

    def from_vllm_engine_output(cls, output: Any):
        data = original(cls, output)
        cached = getattr(output, "num_cached_tokens", None)
        data.metrics = {**(data.metrics or {}), "num_cached_tokens": int(cached or 0)}
        return data

    from_vllm_engine_output._sb_patched = True
    stage.vLLMOutputData.from_vllm_engine_output = classmethod(from_vllm_engine_output)


class VLLMEngine(LLMEngine):
    """vLLM engines as Ray Data LLM actors."""

    name = "vllm"

    def __init__(self, config: JudgeConfig):
        super().__init__(config)
        self.settings = config.vllm

    def token_counter(self) -> TokenCounter:
        """The model's own tokenizer when the model is a local directory, else the estimate."""
        tokenizer_file = Path(self.settings.model) / "tokenizer.json"
        if tokenizer_file.is_file():
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
        return super().token_counter()

    def processor_config(self):
        """The ``vLLMEngineProcessorConfig`` this engine runs (exposed for inspection and tests)."""
        from ray.data.llm import vLLMEngineProcessorConfig

        s = self.settings
        engine_kwargs = {
            "enable_prefix_caching": True,
            "max_model_len": s.max_model_len,
            "tensor_parallel_size": s.tensor_parallel_size,
            "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
            **({"gpu_memory_utilization": s.gpu_memory_utilization} if s.placement_bundles is None else {}),
            **s.engine_kwargs,
        }
        placement = {"bundles": s.placement_bundles} if s.placement_bundles is not None else None
        return vLLMEngineProcessorConfig(
            model_source=s.model,
            engine_kwargs=engine_kwargs,
            batch_size=s.batch_size,
            max_concurrent_batches=s.max_concurrent_batches,
            concurrency=s.concurrency,
            accelerator_type=s.accelerator_type,
            placement_group_config=placement,
            log_engine_metrics=False,
            runtime_env={"env_vars": {**s.env_vars, WORKER_PROCESS_SETUP_HOOK_ENV_VAR: _HOOK}},
            chat_template_stage={"chat_template_kwargs": {"enable_thinking": s.enable_thinking}},
            should_continue_on_error=True,
        )

    def prompt_stage(self) -> VLLMEngine:
        return self

    def render_rows(self, requests: Sequence[StageRequest]) -> list[dict[str, Any]]:
        """Prompt rows for the processor, in the order given (a page's stage requests adjacent)."""
        rendered = self.render_all(requests)
        return [
            {
                "key": r.judgment_key,
                # The schema stays a JSON string: as a dict, Arrow would merge the three stages' schemas
                # into one struct type and fill the other stages' keys with nulls.
                "messages_json": json.dumps(rendered[r.judgment_key].messages),
                "schema": json.dumps(rendered[r.judgment_key].json_schema),
                "truncated_chars": rendered[r.judgment_key].truncated_chars,
            }
            for r in requests
        ]

    def __call__(self, prompts: Dataset, carry: Sequence[str] = ("key",)) -> Dataset:
        """The Ray Data LLM processor over prompt rows; the ``carry`` columns of a row are kept.

        Output rows have ``key, text, prompt_tokens, cached_prompt_tokens, output_tokens, latency_s``
        and ``error`` (None, or why the engine gave no answer).
        """
        from ray.data.llm import build_processor

        sampling = self.config.sampling.model_dump()

        def preprocess(row: dict) -> dict:
            return {
                "messages": json.loads(row["messages_json"]),
                "sampling_params": {**sampling, "structured_outputs": {"json": row["schema"]}},
            }

        def postprocess(row: dict) -> dict:
            metrics = row.pop("metrics", None) or {}
            return {
                **{k: row.get(k) for k in carry},
                "text": row.get("generated_text"),
                "prompt_tokens": int(row.get("num_input_tokens") or 0),
                "cached_prompt_tokens": int(metrics.get("num_cached_tokens") or 0),
                "output_tokens": int(row.get("num_generated_tokens") or 0),
                "latency_s": float(row.get("time_taken_llm") or 0.0),
                "error": None,
            }

        processor = build_processor(self.processor_config(), preprocess=preprocess, postprocess=postprocess)
        return processor(prompts)

    def generate(self, prompts: list[Prompt]) -> Iterator[Completion]:
        """Run one batch pass over a few prompts (repairs); yields completions as batches finish."""
        if not prompts:
            return
        import ray

        items = [
            {"key": p.key, "messages_json": json.dumps(p.messages), "schema": json.dumps(p.json_schema)}
            for p in prompts
        ]
        ds = ray.data.from_items(items, override_num_blocks=max(1, len(items) // self.settings.batch_size))
        seen: set[str] = set()
        for row in self(ds).iter_rows():
            completion = completion_of(row)
            if completion is not None:
                seen.add(completion.key)
                yield completion
        for p in prompts:
            if p.key not in seen:
                yield Completion(p.key, None, error="no output row from the vLLM processor")


def completion_of(row: dict[str, Any]) -> Completion | None:
    """The Completion of one processor output row (None for a row without a key)."""
    key = row.get("key")
    if not key:
        return None
    error = row.get("__inference_error__") or row.get("error")
    if error:
        return Completion(key, None, error=f"vLLM inference error: {str(error)[:300]}")
    return Completion(
        key,
        row.get("text"),
        int(row.get("prompt_tokens") or 0),
        int(row.get("cached_prompt_tokens") or 0),
        int(row.get("output_tokens") or 0),
        float(row.get("latency_s") or 0.0),
    )
