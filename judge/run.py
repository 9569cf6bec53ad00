"""Judge a run: page x query requests in, resumable ``<run>/judgments/*.parquet`` out, as a stream of units.

The driver holds only the plan: the (page, query) pairs chosen by :func:`judge.pairs.judge_pairs`
(a few short columns) cut into units, one per page part (:mod:`judge.units`). Units whose marker
says they are done under this judge's identity are skipped; the others stream through workers that
read their page rows, build and render the stage requests, judge them and write the judgment parts.

Executors (``judge.executor``):

- engines that judge inside workers (signals, openai): a Ray Data actor pool over the units, one
  engine per actor (MiniLM loaded once per actor; an HTTP engine keeps ``openai.concurrency``
  requests in flight per actor); ``local`` runs the same unit function in this process;
- engines with a Ray Data stage (vllm): units -> render in CPU workers -> the Ray Data LLM processor
  (a page's requests adjacent, for the prefix cache) -> parse, validate and write in CPU workers;
  invalid answers are re-asked in a small repair pass.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from crawler.base import RunStore
from crawler.layout import LAYOUT
from judge.config import JudgeConfig
from judge.engines.base import Completion, Prompt, PromptStage, outcome_of
from judge.engines.vllm_ray import completion_of
from judge.output import repair_messages
from judge.packet import PagePacket, StageRequest
from judge.plan import INDEX_SCHEMA, PlanBuilder, RequestSource, index_parts
from judge.rubric import STAGES
from judge.schema import JUDGMENT_SCHEMA
from judge.units import (
    FINAL_STATUSES,
    TOKEN_FIELDS,
    Unit,
    UnitCounts,
    UnitJudge,
    judgment_key,
    judgment_parts_by_shard,
    plan_unit,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.dataset as ds

log = logging.getLogger(__name__)

#: Columns of a prompt row that the engine stage carries through to the parse stage.
_CARRY = (
    "key", "unit", "url_key", "query_id", "stage", "truncated_chars", "schema", "messages_json",
    "retries_left", "prior_prompt_tokens", "prior_cached_tokens", "prior_output_tokens", "prior_latency_s",
)  # fmt: skip


def judgments_dataset(run_uri: str) -> ds.Dataset:
    """Every judgment part of a run as one dataset (JUDGMENT_SCHEMA), to scan batch by batch."""
    store = RunStore(run_uri)
    paths = [store.path(LAYOUT.judgments, n) for n in store.listdir(LAYOUT.judgments, suffix=".parquet")]
    import pyarrow.dataset as ds  # pulls in pandas: not at import, so `--help` stays fast

    return ds.dataset(paths, filesystem=store.fs, format="parquet", schema=JUDGMENT_SCHEMA)


def read_judgments(run_uri: str, columns: Sequence[str] | None = None) -> pa.Table:
    """All judgment rows of a run (every part), in JUDGMENT_SCHEMA; only ``columns`` when given."""
    return judgments_dataset(run_uri).to_table(columns=list(columns) if columns is not None else None)


def page_index(store: RunStore, parts: Sequence[str] | None = None) -> pa.Table:
    """The short columns of the run's page records (:data:`judge.pairs.ALIAS_COLUMNS`) and the part
    holding each, in one table (for small runs and samples; the judge's plan reads them part by part).

    Args:
        store: The run.
        parts: Page part names to index; None indexes every committed part.
    """
    names = store.listdir(LAYOUT.pages, suffix=".parquet") if parts is None else list(parts)
    return pa.concat_tables([INDEX_SCHEMA.empty_table(), *index_parts(store, names)])


def _use_ray(config: JudgeConfig) -> bool:
    if config.executor != "auto":
        return config.executor == "ray"
    import ray

    return ray.is_initialized() or bool(os.environ.get("RAY_ADDRESS"))


def judge_run(
    run_uri: str,
    requests: pa.Table | RequestSource,
    config: JudgeConfig,
    *,
    parts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Judge every (page, query) in ``requests`` and write ``<run>/judgments/*.parquet``.

    Args:
        run_uri: The run directory (local or ``s3://``); page records are read from ``<run>/pages/``.
        requests: Columns ``url_key, query_id, query_text``, one row per page x query to judge (a
            table, or a :class:`judge.plan.RequestSource` read batch by batch); the pairs actually
            judged follow :func:`judge.pairs.judge_pairs`.
        config: The judge configuration.
        parts: The page parts to judge (a streaming audit passes the parts of the shards that just
            finished); None judges every page part of the run.

    Returns:
        A summary: request counts by status, what was reused, units run and skipped, and summed
        token accounting.
    """
    started = time.perf_counter()
    store = RunStore(run_uri)
    source = requests if isinstance(requests, RequestSource) else RequestSource.of_table(requests)
    parts = store.listdir(LAYOUT.pages, suffix=".parquet") if parts is None else parts
    driver = UnitJudge(store.uri, config)
    counts = UnitCounts()
    marked = set(store.listdir(LAYOUT.judge_markers(driver.identity), suffix=".json"))
    planned_parts = set(store.listdir(LAYOUT.judge_plans, suffix=".parquet"))
    judgment_parts = judgment_parts_by_shard(store.listdir(LAYOUT.judgments, suffix=".parquet"))
    pending, units = [], 0
    for planned in PlanBuilder(store, source, parts, config.plan_bucket_rows).units():
        unit, pairs = plan_unit(planned, judgment_parts)
        units += 1
        marker = (
            store.read_json(LAYOUT.judge_marker(driver.identity, unit.unit))
            if f"{unit.unit}.json" in marked
            else None
        )
        if marker is not None and marker.get("pairs_sha") == unit.pairs_sha:
            counts.stage_requests += marker["stage_requests"]
            counts.already_done += marker["stage_requests"]
            continue
        if posixpath.basename(unit.pairs_path) not in planned_parts:
            store.write_table(unit.pairs_path, pairs)
        pending.append(unit)
    planned = time.perf_counter()
    stage = driver.engine.prompt_stage()
    if pending and stage is not None:
        _run_prompt_stage(driver, pending, stage, counts)
    elif pending and _use_ray(config):
        _run_actor_pool(store.uri, config, pending, counts)
    else:
        for unit in pending:
            counts.merge_row(driver.judge_unit(unit).to_row(unit.unit))
    summary = {
        "engine": driver.engine.name,
        "model": driver.engine.model,
        "prompt_layout": driver.engine.prompt_layout,
        "identity": driver.identity,
        "requests": source.num_rows,
        "units": units,
        "units_run": len(pending),
        "stage_requests": counts.stage_requests,
        "already_done": counts.already_done,
        "from_cache": counts.from_cache,
        "judged": counts.judged,
        "statuses": dict(counts.statuses),
        **{name: int(counts.tokens[name]) for name in TOKEN_FIELDS},
        "engine_latency_s": round(counts.latency_s, 3),
        "plan_s": round(planned - started, 3),
        "judge_s": round(time.perf_counter() - planned, 3),
        "wall_s": round(time.perf_counter() - started, 3),
    }
    store.write_json(LAYOUT.judge_summary(), summary)
    return summary


def _workers(config: JudgeConfig) -> int:
    if config.workers is not None:
        return config.workers
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _pool(config: JudgeConfig, units: int):
    """An actor pool of up to ``judge.workers`` actors, all started at once when there is work for them."""
    import ray

    most = _workers(config)
    return ray.data.ActorPoolStrategy(min_size=1, max_size=most, initial_size=max(1, min(most, units)))


def _run_actor_pool(run_uri: str, config: JudgeConfig, units: list[Unit], counts: UnitCounts) -> None:
    """Units through a Ray Data actor pool; each actor builds its engine once."""
    import ray

    items = ray.data.from_items([u.to_item() for u in units], override_num_blocks=len(units))
    judged = items.map_batches(
        UnitJudge,
        fn_constructor_args=(run_uri, config),
        batch_size=1,
        batch_format="pyarrow",
        compute=_pool(config, len(units)),
        num_cpus=1,
    )
    for row in judged.iter_rows():
        counts.merge_row(row)


# -- the prompt-stage pipeline (vllm) ----------------------------------------------------------------
class RenderUnits(UnitJudge):
    """CPU workers before the engine stage: a unit's requests, rendered, as prompt rows."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows: list[dict[str, Any]] = []
        for item in batch.to_pylist():
            unit = Unit.from_item(item)
            writer = self.writer(unit.unit)
            prepared = self.prepare(unit, writer)
            writer.flush()
            stage = self.engine.prompt_stage()
            assert stage is not None
            info = json.dumps(prepared.counts.to_row(unit.unit))
            total = len(prepared.pending)
            if not total:
                self.mark_done(unit, prepared.counts)
            for request, prompt in zip(prepared.pending, stage.render_rows(prepared.pending), strict=True):
                rows.append(
                    {
                        **prompt,
                        "unit": unit.unit,
                        "unit_total": total,
                        "unit_info": info,
                        "url_key": request.page.url_key,
                        "query_id": request.query_id,
                        "stage": request.stage,
                        "retries_left": self.config.repair_retries,
                        "prior_prompt_tokens": 0,
                        "prior_cached_tokens": 0,
                        "prior_output_tokens": 0,
                        "prior_latency_s": 0.0,
                    }
                )
        return pa.Table.from_pylist(rows)


def _answer(completion: Completion) -> dict[str, Any]:
    """The answer columns of an engine output row (what :func:`completion_of` reads back)."""
    return {
        "text": completion.text,
        "error": completion.error,
        "prompt_tokens": completion.prompt_tokens,
        "cached_prompt_tokens": completion.cached_prompt_tokens,
        "output_tokens": completion.output_tokens,
        "latency_s": completion.latency_s,
    }


def _merged(completion: Completion, row: dict[str, Any]) -> Completion:
    """A completion with the tokens of earlier attempts (repairs) added."""
    return Completion(
        completion.key,
        completion.text,
        completion.prompt_tokens + int(row.get("prior_prompt_tokens") or 0),
        completion.cached_prompt_tokens + int(row.get("prior_cached_tokens") or 0),
        completion.output_tokens + int(row.get("prior_output_tokens") or 0),
        completion.latency_s + float(row.get("prior_latency_s") or 0.0),
        completion.error,
    )


def write_outcomes(worker: UnitJudge, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parse and validate engine answers, commit the judgment rows per unit; one summary row per unit.

    An invalid answer with retries left is not written: it goes back to the driver as a repair row.
    """
    by_unit: dict[str, list[dict[str, Any]]] = defaultdict(list)
    repairs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        completion = completion_of(row)
        if completion is None:
            continue
        completion = _merged(completion, row)
        outcome = outcome_of(completion, row["stage"])
        if outcome.status == "unscorable" and int(row["retries_left"]) > 0:
            messages = repair_messages(
                json.loads(row["messages_json"]), completion.text or "", outcome.problem or ""
            )
            repairs[row["unit"]].append(
                {
                    **{k: row[k] for k in _CARRY},
                    "messages_json": json.dumps(messages),
                    "retries_left": int(row["retries_left"]) - 1,
                    "prior_prompt_tokens": completion.prompt_tokens,
                    "prior_cached_tokens": completion.cached_prompt_tokens,
                    "prior_output_tokens": completion.output_tokens,
                    "prior_latency_s": completion.latency_s,
                }
            )
            continue
        request = StageRequest(
            row["key"], PagePacket(row["url_key"], "", "", ""), row["query_id"], "", row["stage"]
        )
        by_unit[row["unit"]].append(worker.row(request, outcome, truncated=int(row["truncated_chars"] or 0)))
    out = []
    for unit in sorted(set(by_unit) | set(repairs)):
        counts = UnitCounts()
        writer = worker.writer(unit)
        for judgment in by_unit[unit]:
            counts.add_row(judgment)
        writer.add(by_unit[unit])
        writer.flush()
        out.append(
            {**counts.to_row(unit), "written": len(by_unit[unit]), "repairs": json.dumps(repairs[unit])}
        )
    return out


class WriteOutcomes(UnitJudge):
    """CPU workers after the engine stage: :func:`write_outcomes` over each batch of answers."""

    def __call__(self, batch: pa.Table | pd.DataFrame) -> pa.Table:
        # Fused behind the processor's postprocess, Ray Data may hand over pandas despite
        # batch_format="pyarrow"; through Arrow, pandas' NaN placeholders become nulls again.
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_pandas(batch, preserve_index=False)
        rows = table.to_pylist()
        info = {r["unit"]: (r["unit_total"], r["unit_info"]) for r in rows if r.get("unit")}
        out = write_outcomes(self, rows)
        for row in out:
            row["unit_total"], row["unit_info"] = info.get(row["unit"], (0, "{}"))
        return pa.Table.from_pylist(out)


def _run_prompt_stage(driver: UnitJudge, units: list[Unit], stage: PromptStage, counts: UnitCounts) -> None:
    """Units -> render (CPU workers) -> engine stage -> parse and write (CPU workers); repairs; markers."""
    import ray

    config, uri = driver.config, driver.store.uri
    items = ray.data.from_items([u.to_item() for u in units], override_num_blocks=len(units))
    prompts = items.map_batches(
        RenderUnits, fn_constructor_args=(uri, config), batch_size=1, batch_format="pyarrow",
        compute=_pool(config, len(units)), num_cpus=1,
    )  # fmt: skip
    answers = stage(prompts, carry=(*_CARRY, "unit_total", "unit_info"))
    written = answers.map_batches(
        WriteOutcomes,
        fn_constructor_args=(uri, config),
        batch_format="pandas",
        compute=_pool(config, len(units)),
        num_cpus=1,
    )
    totals: dict[str, int] = {}
    done: dict[str, int] = defaultdict(int)
    unit_counts: dict[str, UnitCounts] = defaultdict(UnitCounts)
    repairs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in written.iter_rows():
        unit = row["unit"]
        if unit not in seen:
            seen.add(unit)
            unit_counts[unit].merge_row(json.loads(row["unit_info"]))
        totals[unit] = int(row["unit_total"])
        done[unit] += int(row["written"])
        part = {k: row[k] for k in ("unit", "statuses", *TOKEN_FIELDS, "latency_s")}
        unit_counts[unit].merge_row(
            {**part, "stage_requests": 0, "already_done": 0, "from_cache": 0, "judged": 0}
        )
        repairs += json.loads(row["repairs"])
    _repair(driver, stage, repairs, done, unit_counts)
    for unit in units:
        if unit.unit in seen:
            if done[unit.unit] >= totals[unit.unit]:
                driver.mark_done(unit, unit_counts[unit.unit])
            counts.merge_row(unit_counts[unit.unit].to_row(unit.unit))
        else:  # nothing was left to judge: the render worker marked it and recorded its counts
            marker = driver.store.read_json(LAYOUT.judge_marker(driver.identity, unit.unit))
            counts.stage_requests += marker["stage_requests"]
            counts.already_done += marker["stage_requests"]


def _repair(
    driver: UnitJudge,
    stage: PromptStage,
    repairs: list[dict[str, Any]],
    done: dict[str, int],
    unit_counts: dict[str, UnitCounts],
) -> None:
    """Re-ask invalid answers (a small pass per round) and commit what comes back."""
    while repairs:
        prompts = [Prompt(r["key"], json.loads(r["messages_json"]), json.loads(r["schema"])) for r in repairs]
        by_key = {r["key"]: r for r in repairs}
        answered = []
        for completion in stage.generate(prompts):
            row = by_key[completion.key]
            answered.append({**row, **_answer(completion)})
        repairs = []
        for row in write_outcomes(driver, answered):
            done[row["unit"]] += int(row["written"])
            part = {k: row[k] for k in ("unit", "statuses", *TOKEN_FIELDS, "latency_s")}
            unit_counts[row["unit"]].merge_row(
                {**part, "stage_requests": 0, "already_done": 0, "from_cache": 0, "judged": 0}
            )
            repairs += json.loads(row["repairs"])


def accounting(judgments: pa.Table) -> dict[str, Any]:
    """Token and latency totals of a judgments table, overall and per stage (for cost reports)."""
    out: dict[str, Any] = {}
    for stage in (None, *STAGES):
        table = judgments if stage is None else judgments.filter(pc.equal(judgments["stage"], stage))
        table = table.filter(pc.not_equal(table["status"], "skipped"))
        prompt = pc.sum(table["prompt_tokens"]).as_py() or 0
        cached = pc.sum(table["cached_prompt_tokens"]).as_py() or 0
        entry = {
            "judgments": table.num_rows,
            "prompt_tokens": prompt,
            "cached_prompt_tokens": cached,
            "prefill_tokens": prompt - cached,
            "output_tokens": pc.sum(table["output_tokens"]).as_py() or 0,
            "prefix_cache_hit_rate": cached / prompt if prompt else 0.0,
            "latency_s": pc.sum(table["latency_s"]).as_py() or 0.0,
        }
        out["total" if stage is None else stage] = entry
    return out


__all__ = [
    "FINAL_STATUSES",
    "accounting",
    "judge_run",
    "judgment_key",
    "page_index",
    "read_judgments",
]
