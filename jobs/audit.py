"""The end-to-end audit: citations + queries -> crawl -> judge -> scores -> reduce -> report.

Usage (the same flags locally and on a cluster)::

    sourcebench audit --config jobs/configs/demo.yaml
    sourcebench audit --config my.yaml --set judge.engine=vllm --set store.run=s3://bucket/audits/r1
    ray job submit --address http://HEAD:8265 --working-dir . -- python -m jobs.audit --config my.yaml

Every stage commits its output to the run store and then writes a marker carrying a fingerprint of
its inputs and config; a rerun skips a stage whose marker matches and redoes one whose inputs or
config changed (the crawler and the judge then only do the work that is missing or changed, thanks
to their own resume markers and judgment cache). A stage that runs invalidates every stage after
it, so scores, reduce and report always follow. A rerun of the same run folder also redoes what is
stale (:mod:`jobs.staleness`): pages a changed network policy refused, transport errors of pages and
judgments; ``--retry-failed`` and ``--force STAGE`` ask for more. With ``cluster.stream`` the judge
scores pages while the crawl is still committing them.

The audit exits 0 only when every stage completed and coverage is acceptable (:mod:`jobs.coverage`);
otherwise it exits 1 with a one-paragraph diagnosis, and the leaderboard and report are stamped
incomplete. Inputs, config and the judge endpoint are checked before Ray starts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from crawler.base import InputError, RunStore, read_yaml
from crawler.layout import LAYOUT
from crawler.runner import page_status_counts, pages_dataset
from jobs import staleness
from jobs.cli import add_set_argument
from jobs.collectors.serp import load_serp
from jobs.config import AuditConfig, load_config
from jobs.coverage import measure_coverage
from jobs.crawl import crawl_run
from jobs.inputs import load_citations, load_queries
from jobs.judge import requests_from_run
from jobs.manifest import RunManifest, file_sha256, fingerprint
from jobs.progress import crawl_progress, judge_progress
from jobs.ray_runtime import ensure_ray
from jobs.scoring import (
    QueryRanges,
    page_summaries,
    page_vectors,
    select_sources,
    write_source_scores,
)
from judge import content_vectors, judge_run
from judge.engines.openai_http import EndpointUnavailable, preflight
from judge.pairs import ALIAS_COLUMNS, judge_pairs, page_ids, pair_ids
from judge.run import FINAL_STATUSES, judgments_dataset, page_index
from judge.vectors import VECTOR_COLUMNS

if TYPE_CHECKING:
    import pyarrow.dataset as ds

#: The stages in order; a stage that runs invalidates every stage after it.
STAGES = ("inputs", "crawl", "judge", "scores", "reduce", "report")
#: Token counts of a judgment that the run summary adds up.
TOKEN_COLUMNS = ("prompt_tokens", "cached_prompt_tokens", "output_tokens")
STATUS_COLUMNS = ("url_key", "status")


def print_line(message: str) -> None:
    """One progress line, written in one call so that lines from the crawl and judge threads never mix."""
    sys.stdout.write(f"{message}\n")
    sys.stdout.flush()


class IncompleteRunError(RuntimeError):
    """A stage finished but its output is not complete (missing or duplicated rows)."""


#: Failures that end an audit with exit status 1 and their message, not a traceback.
RUN_FAILURES = (IncompleteRunError, EndpointUnavailable)


@dataclass
class Audit:
    """One audit run: its config, its store and manifest, and the fingerprints of finished stages."""

    config: AuditConfig
    store: RunStore = field(init=False)
    manifest: RunManifest = field(init=False)
    fingerprints: dict[str, str] = field(default_factory=dict)
    log: Callable[[str], None] = print_line
    retry_failed: bool = False
    """Fetch again every failed page and judge again every failed judgment (``--retry-failed``)."""
    force: frozenset[str] = frozenset()
    """Stages to redo whatever their markers say (``--force STAGE``); later stages follow."""

    def __post_init__(self) -> None:
        self.store = RunStore(self.config.store.run)
        self.manifest = RunManifest.open(self.store)

    # -- stage bookkeeping ---------------------------------------------------------------------------
    def marker(self, stage: str) -> dict[str, Any] | None:
        """The stage's done marker, or None."""
        if not self.store.is_done(LAYOUT.audit, stage):
            return None
        return self.store.done_info(LAYOUT.audit, stage)

    def committed(self, stage: str, stage_fingerprint: str) -> bool:
        """Whether ``stage`` already committed its output for exactly these inputs and config, with
        nothing stale in it and no ``--force``."""
        self.fingerprints[stage] = stage_fingerprint
        marker = self.marker(stage)
        if stage in self.force or marker is None or marker.get("fingerprint") != stage_fingerprint:
            return False
        return not self.stale(stage)

    def stale(self, stage: str) -> bool:
        """Whether a committed stage holds work a rerun must redo (failed pages or judgments)."""
        if stage == "crawl":
            statuses, _ = self.refetch_statuses()
            return any(page_status_counts(self.store).get(s) for s in statuses)
        if stage == "judge":
            return staleness.unresolved_judgments(self.store, self.judge_retry_statuses()) > 0
        return False

    def crawl_settings(self) -> dict[str, Any]:
        """The crawl settings that decide what is fetched (recorded in :data:`LAYOUT.crawl_settings`)."""
        return self.config.crawl.fingerprint_payload()

    def refetch_statuses(self) -> tuple[set[str], list[str]]:
        """Page statuses this run fetches again, and the changed crawl settings that refetch nothing."""
        statuses = staleness.retry_statuses(
            self.retry_failed, "crawl" in self.force, replay=bool(self.config.crawl.replay_warcs)
        )
        if not self.store.exists(LAYOUT.crawl_settings):
            return statuses, []
        changed, unmapped = staleness.statuses_for(
            staleness.changed_settings(self.store.read_json(LAYOUT.crawl_settings), self.crawl_settings())
        )
        return statuses | changed, unmapped

    def judge_retry_statuses(self) -> frozenset[str]:
        if self.retry_failed:
            return staleness.JUDGE_FAILED_STATUSES
        return staleness.JUDGE_RETRY_STATUSES

    def before_stage(self, stage: str) -> None:
        """Drop what this run redoes: stale page records before the crawl, failed judgments before the
        judge (the crawl and judge then redo just those), everything under ``--force``."""
        if stage == "crawl":
            statuses, unmapped = self.refetch_statuses()
            if unmapped:
                self.log(
                    f"[crawl] changed settings {', '.join(unmapped)} do not refetch pages already fetched "
                    "(--force crawl refetches every page)"
                )
            if dropped := staleness.reopen_pages(self.store, statuses):
                self.log(f"[crawl] fetching {dropped} pages again (status {', '.join(sorted(statuses))})")
        elif stage == "judge":
            statuses = None if "judge" in self.force else self.judge_retry_statuses() - {"error"}
            if statuses is None or statuses:
                dropped = staleness.drop_judgments(self.store, statuses)
                self.log(f"[judge] judging {dropped} judgments again")

    def run_stage(self, stage: str, stage_fingerprint: str, work: Callable[[], dict[str, Any]]) -> None:
        """Run ``work`` unless the stage is committed; record its counts and timing, then mark it done.

        A stage that runs first removes the markers of every later stage, so they follow it even if
        this run is killed before they start.
        """
        if self.committed(stage, stage_fingerprint):
            self.log(f"[{stage}] already committed, skipped")
            self.manifest.record_stage(stage, status="skipped", fingerprint=stage_fingerprint)
            return
        self.log(f"[{stage}] running")
        for later in STAGES[STAGES.index(stage) + 1 :]:
            self.store.forget_done(LAYOUT.audit, later)
        self.before_stage(stage)
        started, wall = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), time.monotonic()
        with self.progress(stage):
            counts = work()
        wall_s = round(time.monotonic() - wall, 3)
        self.manifest.record_stage(
            stage,
            status="done",
            fingerprint=stage_fingerprint,
            started_at=started,
            wall_s=wall_s,
            counts=counts,
        )
        if stage == "crawl":
            self.store.write_json(LAYOUT.crawl_settings, self.crawl_settings())
        self.store.mark_done(LAYOUT.audit, stage, {"fingerprint": stage_fingerprint, "wall_s": wall_s})
        self.log(f"[{stage}] done in {wall_s:.1f} s {_short(counts)}")

    def progress(self, stage: str) -> AbstractContextManager[Any]:
        """Live count, rate and ETA of the crawl and judge stages (jobs.progress); nothing for the rest."""
        if stage == "crawl":
            return crawl_progress(self.store, total=len(pc.unique(self.selected()["url_key"])))
        if stage == "judge":
            return judge_progress(self.store, self.stage_requests_total)
        return nullcontext()

    def stage_requests_total(self) -> int:
        """Stage requests the judge stage makes: three per (fetched page, query) pair to judge."""
        pairs = judge_pairs(self.cited_requests(), self.read_pages(ALIAS_COLUMNS))
        return 3 * (pairs.num_rows - pairs["page_id"].null_count)

    # -- the pipeline --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Run every stage that is not committed yet; returns the run summary (with its coverage).

        Inputs are read, checked and selected before Ray starts (errors in seconds, not after a
        cluster start), and an openai judge endpoint is checked before the crawl spends time.
        """
        config = self.config
        files = [config.inputs.queries, *config.inputs.citations, *config.inputs.serp.values()]
        input_hashes = {path: file_sha256(path) for path in files}
        robots = {
            "obey_robots": config.crawl.network.obey_robots,
            "override": None if config.crawl.network.obey_robots else "crawl.network.obey_robots=false",
        }
        inputs_fp = fingerprint(
            input_hashes,
            config.inputs.system,
            sorted(config.inputs.serp.items()),
            config.scoring.model_dump(),
        )
        crawl_fp = fingerprint(inputs_fp, self.crawl_settings())
        judge_fp = fingerprint(crawl_fp, config.judge.fingerprint_payload())
        self.manifest.begin_attempt(config.to_dict(), input_hashes, robots)
        wall = time.monotonic()
        try:
            self.run_stage("inputs", inputs_fp, self.stage_inputs)
            if config.judge.engine == "openai" and not self.committed("judge", judge_fp):
                preflight(config.judge.openai)
            ensure_ray(config.cluster.ray)  # after the inputs are read: bad input fails before Ray starts
            streaming = config.cluster.stream and not self.committed("crawl", crawl_fp)
            if streaming and not self.committed("judge", judge_fp):
                self.stage_crawl_and_judge_streaming(crawl_fp, judge_fp)
            else:
                self.run_stage("crawl", crawl_fp, self.stage_crawl)
                self.run_stage("judge", judge_fp, self.stage_judge)
            scores_fp = fingerprint(judge_fp)
            self.run_stage("scores", scores_fp, self.stage_scores)
            coverage = self.measure_coverage()
            # the SERP names decide the official rank columns the reduce fills
            reduce_fp = fingerprint(
                scores_fp, config.reduce.fingerprint_payload(), sorted(config.inputs.serp)
            )
            self.run_stage("reduce", reduce_fp, self.stage_reduce)
            self.stamp_leaderboard(coverage)
            if config.report is not None:
                report_fp = fingerprint(reduce_fp, coverage["complete"], coverage["min_share"])
                self.run_stage("report", report_fp, self.stage_report)
        except BaseException:
            self.manifest.end_attempt("failed")
            raise
        summary = self.summary(time.monotonic() - wall)
        summary["coverage"] = coverage
        self.manifest.end_attempt("done" if coverage["complete"] else "incomplete", summary)
        return summary

    def measure_coverage(self) -> dict[str, Any]:
        """Coverage of the scored sources against ``coverage.min_share``, kept in ``scores/coverage.json``."""
        scores = self.store.read_table(LAYOUT.source_scores)
        coverage = measure_coverage(scores, self.config.coverage, self.config.reduce.policy)
        self.store.write_json(LAYOUT.coverage, coverage)
        return coverage

    def stamp_leaderboard(self, coverage: dict[str, Any]) -> None:
        """Coverage per system beside the leaderboard files, and ``INCOMPLETE.txt`` while it is short."""
        self.store.write_json(LAYOUT.leaderboard_coverage, coverage)
        stamp = LAYOUT.leaderboard_file(LAYOUT.incomplete_stamp)
        if coverage["complete"]:
            self.store.delete(stamp)
        else:
            self.store.write_text(stamp, coverage["diagnosis"] + "\n")

    def stage_inputs(self) -> dict[str, Any]:
        """Read and validate the inputs, select the sources to audit, and keep copies in the run."""
        inputs = self.config.inputs
        queries = load_queries(inputs.queries)
        citations = load_citations(inputs.citations, system=inputs.system)
        serps = [load_serp(path, name, queries) for name, path in inputs.serp.items()]
        citations = pa.concat_tables([citations, *serps])
        selected = select_sources(citations, queries, self.config.scoring.top_k, ", ".join(inputs.citations))
        self.store.write_table(LAYOUT.queries, queries)
        self.store.write_table(LAYOUT.citations, citations)
        self.store.write_table(LAYOUT.selected, selected)
        return {
            "queries": queries.num_rows,
            "citations": citations.num_rows,
            "systems": len(pc.unique(citations["system"])),
            "selected_sources": selected.num_rows,
            "distinct_urls": len(pc.unique(selected["url_key"])),
        }

    def selected(self) -> pa.Table:
        return self.store.read_table(LAYOUT.selected)

    def stage_crawl(self) -> dict[str, Any]:
        """Fetch (or replay) every selected URL once; one page record per canonical URL."""
        urls = sorted(set(self.selected()["cited_url"].to_pylist()))
        crawl_run(self.store.uri, urls, self.config.crawl)
        return self.check_pages()

    def stage_judge(self) -> dict[str, Any]:
        """Judge every fetched page for every query that cites it (three stage requests each)."""
        requests = self.cited_requests()
        if requests.num_rows:
            judge_run(self.store.uri, requests, self.config.judge)
        return self.check_judgments(requests)

    def stage_crawl_and_judge_streaming(self, crawl_fp: str, judge_fp: str) -> None:
        """Crawl in a background thread; judge the pages of each crawl shard as soon as its marker appears.

        Each pass reads only the page parts of the shards finished since the last pass; a page that is
        an alias of one judged in an earlier pass (same final URL and content) is left to that judgment.
        """
        failure: list[BaseException] = []

        def crawl() -> None:
            try:
                self.run_stage("crawl", crawl_fp, self.stage_crawl)
            except BaseException as exc:  # re-raised in the main thread
                failure.append(exc)

        def judge() -> dict[str, Any]:
            requests = self.cited_requests()
            taken: set[str] = set()  # crawl shards whose pages were handed to the judge
            waiting: list[pa.Table] = []  # page index of their parts, not judged yet (read once)
            waiting_parts: list[str] = []
            judged_pages = pa.array([], pa.string())  # page ids judged in earlier passes
            while True:
                finished = not crawler.is_alive()
                if failure:
                    raise failure[0]
                shards = self.store.done_tasks(LAYOUT.crawl) - taken
                if shards:
                    taken |= shards
                    names = self.store.listdir(LAYOUT.pages, suffix=".parquet")
                    parts = [n for n in names if LAYOUT.shard_of_page_part(n) in shards]
                    waiting.append(page_index(self.store, parts))
                    waiting_parts += parts
                if waiting:
                    index = pa.concat_tables(waiting)
                    ids = page_ids(index)
                    aliases = ids.filter(pc.is_in(ids["page_id"], judged_pages))["url_key"]
                    index = index.filter(pc.invert(pc.is_in(index["url_key"], aliases)))
                    wanted = requests.filter(pc.is_in(requests["url_key"], index["url_key"]))
                    if wanted.num_rows >= self.config.cluster.stream_min_requests or finished:
                        self.log(f"[judge] streaming {wanted.num_rows} new page x query requests")
                        judge_run(self.store.uri, wanted, self.config.judge, parts=waiting_parts)
                        judged_pages = pa.concat_arrays([judged_pages, ids["page_id"].combine_chunks()])
                        waiting, waiting_parts = [], []
                if finished and not waiting:
                    return self.check_judgments(requests)
                time.sleep(self.config.cluster.poll_s)

        crawler = threading.Thread(target=crawl, name="audit-crawl", daemon=True)
        crawler.start()
        try:
            self.run_stage("judge", judge_fp, judge)
        finally:
            crawler.join()
        if failure:
            raise failure[0]

    def stage_scores(self) -> dict[str, Any]:
        """Join selected sources, pages and content vectors into ``scores/source_scores.parquet``."""
        with tempfile.TemporaryDirectory(prefix="sourcebench-scores-") as folder:
            counts = write_source_scores(
                self.store,
                self.selected(),
                page_summaries(pages_dataset(self.store)),
                judgments_dataset(self.store.uri),
                Path(folder),
                self.config.judge.plan_bucket_rows,
            )
        return {"sources": sum(counts["page_status"].values()), **counts}

    def stage_reduce(self) -> dict[str, Any]:
        from jobs.reduce import reduce_run  # pandas: loaded by the stages that use it, not for `--help`

        summary = reduce_run(
            self.store.uri,
            self.config.reduce,
            self.config.cluster.ray,
            serp_systems=list(self.config.inputs.serp),
        )
        return {"sources": summary["sources"], "systems": summary["systems"]}

    def stage_report(self) -> dict[str, Any]:
        report = self.config.report
        if not report.serp_systems and self.config.inputs.serp:
            report = report.model_copy(update={"serp_systems": list(self.config.inputs.serp)})
        from jobs.analysis import write_report  # matplotlib and scipy: loaded when a report is written

        written = write_report(self.store.uri, config=report)
        return {"files": len(written)}

    # -- reading and checking stage outputs ----------------------------------------------------------
    def read_pages(self, columns: tuple[str, ...]) -> pa.Table:
        """Some columns of the committed page records (never the whole records: the text is large)."""
        return pages_dataset(self.store).to_table(columns=list(columns))

    def cited_requests(self) -> pa.Table:
        """``url_key, query_id, query_text``: every selected source with the text of its query.

        Which of these pairs get judged is decided by :func:`judge.pairs.judge_pairs`, as everywhere.
        """
        return requests_from_run(self.store).read_all()

    def check_pages(self) -> dict[str, Any]:
        """Exactly one page record per selected canonical URL, or :class:`IncompleteRunError`."""
        pages = self.read_pages(STATUS_COLUMNS)
        wanted = set(self.selected()["url_key"].to_pylist())
        keys = pages["url_key"].to_pylist()
        duplicates = len(keys) - len(set(keys))
        missing = wanted - set(keys)
        if duplicates or missing:
            raise IncompleteRunError(
                f"crawl output: {duplicates} duplicate page rows, {len(missing)} URLs missing"
            )
        statuses = pc.value_counts(
            pages.filter(pc.is_in(pages["url_key"], pa.array(sorted(wanted))))["status"]
        )
        return {"pages": len(wanted), "status": {s["values"]: s["counts"] for s in statuses.to_pylist()}}

    def check_judgments(self, requests: pa.Table) -> dict[str, Any]:
        """Every request fully judged and no judgment committed twice, else :class:`IncompleteRunError`.

        A run may hold several judgments of one (page, query, stage) under different judgment keys
        (a rescore after a prompt change); the newest wins in the content vectors. What must never
        happen is one judgment of a page committed twice, or a request whose vector is incomplete.
        """
        judgments = judgments_dataset(self.store.uri)
        pages = self.read_pages(ALIAS_COLUMNS)
        ids = page_ids(pages)
        ranges = QueryRanges(requests["query_id"], self.config.judge.plan_bucket_rows)
        request_range = ranges.of(requests["query_id"])
        duplicates = wanted = missing = 0
        with tempfile.TemporaryDirectory(prefix="sourcebench-check-") as folder:
            columns = ("judgment_key", *VECTOR_COLUMNS)  # never raw_output: the answers are large
            spilled = ranges.spill(judgments, columns, Path(folder), keep_others=True)
            for number in range(ranges.count + 1):  # the last: judgments of other queries
                rows = spilled.read(number)
                final = rows.filter(pc.is_in(rows["status"], pa.array(FINAL_STATUSES)))
                keys = final.select(["url_key", "query_id", "stage", "judgment_key"])
                distinct = keys.group_by(keys.column_names, use_threads=False).aggregate([])
                duplicates += keys.num_rows - distinct.num_rows
                if number == ranges.count:
                    break
                vectors = page_vectors(content_vectors(rows), ids)
                done = vectors[vectors["judge_status"] != "partial"]
                complete = set(zip(done["page_id"], done["query_id"], strict=True))
                asked = set(pair_ids(judge_pairs(requests.filter(pc.equal(request_range, number)), pages)))
                wanted, missing = wanted + len(asked), missing + len(asked - complete)
        if duplicates or missing:
            raise IncompleteRunError(
                f"judge output: {duplicates} judgments committed twice, {missing} requests incomplete"
            )
        return {"requests": wanted, **token_totals(judgments)}

    # -- the end-of-run summary -------------------------------------------------------------------------
    def summary(self, wall_s: float) -> dict[str, Any]:
        stages = self.manifest.data["stages"]
        scores = stages.get("scores", {}).get("counts", {})
        crawl_s = stages.get("crawl", {}).get("wall_s")
        pages = stages.get("crawl", {}).get("counts", {}).get("pages")
        return {
            "run": self.store.uri,
            "wall_s": round(wall_s, 3),
            "stage_wall_s": {name: info.get("wall_s") for name, info in stages.items()},
            "pages": pages,
            "pages_per_s": round(pages / crawl_s, 2) if pages and crawl_s else None,
            "sources": scores.get("sources"),
            "page_status": scores.get("page_status"),
            "judge_status": scores.get("judge_status"),
            "tokens": {
                k: v
                for k, v in stages.get("judge", {}).get("counts", {}).items()
                if k.endswith("tokens") or k == "judgments"
            },
        }


def token_totals(judgments: ds.Dataset) -> dict[str, int]:
    """The number of judgment rows and their summed token counts (nulls count as 0), batch by batch."""
    totals = dict.fromkeys(("judgments", *TOKEN_COLUMNS), 0)
    for batch in judgments.to_batches(columns=list(TOKEN_COLUMNS)):
        totals["judgments"] += batch.num_rows
        for column in TOKEN_COLUMNS:
            totals[column] += int(pc.sum(batch.column(column)).as_py() or 0)
    return totals


def _short(counts: dict[str, Any]) -> str:
    flat = {k: v for k, v in counts.items() if not isinstance(v, list)}
    return str(flat) if flat else ""


def print_summary(store: RunStore, summary: dict[str, Any]) -> None:
    """The final report on stdout: statuses, tokens, timings, the leaderboard table and its coverage."""
    coverage = summary.get("coverage")
    print("\n== audit summary ==")
    print(f"run:          {summary['run']}")
    print(f"wall time:    {summary['wall_s']:.1f} s  (per stage: {summary['stage_wall_s']})")
    print(f"pages:        {summary['pages']}  ({summary['pages_per_s']} pages/s crawled)")
    print(f"sources:      {summary['sources']}")
    print(f"page status:  {summary['page_status']}")
    print(f"judge status: {summary['judge_status']}")
    print(f"tokens:       {summary['tokens']}")
    leaderboard = LAYOUT.leaderboard_file(LAYOUT.leaderboard_data)
    if store.exists(leaderboard):
        stamp = "" if coverage is None or coverage["complete"] else "  ** INCOMPLETE **"
        print(f"\n== leaderboard (weighted total, 0-100; a missing page counts 0){stamp} ==")
        from jobs.reduce import print_leaderboard

        print_leaderboard(store.read_json(leaderboard)["overall"])
        if coverage is not None:
            print("\ncoverage (sources fetched ok and scored / selected):")
            for name, counts in coverage["systems"].items():
                print(f"  {name:<24} {counts['judged']:>6} / {counts['selected']:<6} {counts['share']:>7.1%}")
        print(f"\nleaderboard files: {store.uri_of(LAYOUT.leaderboard)}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML config (sections: store, inputs, crawl, judge, ...)")
    add_set_argument(parser, "judge.engine=vllm")
    parser.add_argument("--run", help="run directory URI (= --set store.run=...)")
    parser.add_argument("--queries", help="queries CSV (= --set inputs.queries=...)")
    parser.add_argument("--citations", nargs="+", help="citation files (= --set inputs.citations=[...])")
    parser.add_argument("--ray-address", help="Ray cluster (= --set cluster.ray.address=...)")
    parser.add_argument(
        "--judge-config",
        help="judge config YAML (e.g. judge/configs/qwen_plus_api.yaml; a top-level 'judge:' key is "
        "accepted); its settings replace those of the audit config's judge section, --set still applies",
    )
    parser.add_argument(
        "--allow-private-networks",
        action="store_true",
        help="allow private/loopback addresses (= --set crawl.network.allow_private_networks=true)",
    )
    parser.add_argument(
        "--allowlist",
        action="append",
        metavar="HOST_OR_CIDR",
        help="host or CIDR allowed although private, e.g. 127.0.0.1 (repeatable; adds to "
        "crawl.network.allowlist)",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="fetch again every page that failed and judge again every failed judgment",
    )
    parser.add_argument(
        "--force",
        action="append",
        choices=STAGES,
        default=[],
        metavar="STAGE",
        help=f"redo this stage whatever its marker says ({', '.join(STAGES)}; crawl refetches every page, "
        "judge judges everything again); later stages follow; repeatable",
    )


def judge_overrides(path: str) -> list[str]:
    """``judge.<dotted>=<json>`` overrides for every setting of a judge config file."""
    data = read_yaml(path)
    if "judge" in data:
        data = data["judge"]
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping of judge settings")
    return [f"judge.{key}={json.dumps(value)}" for key, value in staleness.flatten(data).items()]


def config_from_args(args: argparse.Namespace) -> AuditConfig:
    overrides = judge_overrides(args.judge_config) if args.judge_config else []
    overrides += list(args.overrides)
    flags = {
        "store.run": args.run,
        "inputs.queries": args.queries,
        "inputs.citations": args.citations,
        "cluster.ray.address": args.ray_address,
        "crawl.network.allow_private_networks": args.allow_private_networks or None,
    }
    # JSON is YAML: a value is taken as written (a path with ", " stays one path, "yes" stays a string).
    overrides += [f"{key}={json.dumps(value)}" for key, value in flags.items() if value]
    config = load_config(args.config, overrides)
    if args.allowlist:
        network = config.crawl.network
        allowlist = (*network.allowlist, *args.allowlist)
        crawl = config.crawl.model_copy(
            update={"network": network.model_copy(update={"allowlist": allowlist})}
        )
        config.crawl = crawl
    return config


def run(args: argparse.Namespace) -> int:
    """The ``sourcebench audit`` command: 0 complete, 1 incomplete or failed, 2 bad input."""
    try:
        config = config_from_args(args)
        audit = Audit(config, retry_failed=args.retry_failed, force=frozenset(args.force))
        summary = audit.run()
    except RUN_FAILURES as exc:  # before InputError: an unavailable endpoint is one too
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_summary(audit.store, summary)
    coverage = summary["coverage"]
    print(f"\n{coverage['diagnosis']}", file=sys.stderr if not coverage["complete"] else sys.stdout)
    return 0 if coverage["complete"] else 1


if __name__ == "__main__":
    from jobs.cli import run_module

    run_module("audit")
