"""The end-to-end audit: citations + queries -> crawl -> judge -> scores -> reduce -> report.

Usage (the same flags locally and on a cluster)::

    sourcebench audit --config jobs/configs/demo.yaml
    sourcebench audit --config my.yaml --set judge.engine=vllm --set store.run=s3://bucket/audits/r1
    ray job submit --address http://HEAD:8265 --working-dir . -- python -m jobs.audit --config my.yaml

Every stage commits its output to the run store and then writes a marker carrying a fingerprint of
its inputs and config; a rerun skips a stage whose marker matches and redoes one whose inputs or
config changed (the crawler and the judge then only do the work that is missing or changed, thanks
to their own resume markers and judgment cache). With ``cluster.stream`` the judge scores pages
while the crawl is still committing them.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from crawler.errors import InputError
from crawler.layout import LAYOUT
from crawler.schema import PAGE_SCHEMA
from crawler.storage import RunStore
from jobs.analysis import write_report
from jobs.collectors.serp import load_serp
from jobs.config import AuditConfig, load_config
from jobs.crawl import crawl_run
from jobs.inputs import load_citations, load_queries
from jobs.manifest import RunManifest, file_sha256, fingerprint
from jobs.ray_runtime import ensure_ray
from jobs.reduce import print_leaderboard, reduce_run
from jobs.scoring import SCORES_PATH, page_vectors, score_sources, select_sources, status_counts
from judge import content_vectors, judge_run
from judge.pairs import ALIAS_COLUMNS, judge_pairs, page_ids, pair_ids
from judge.run import FINAL_STATUSES, page_index, read_judgments
from judge.schema import JUDGMENT_SCHEMA
from judge.vectors import VECTOR_COLUMNS

STAGE_MARKERS = "audit"
QUERIES_PATH = LAYOUT.queries
CITATIONS_PATH = LAYOUT.citations
SELECTED_PATH = LAYOUT.selected
LEADERBOARD_DATA = "leaderboard/leaderboard_data.json"
STATUS_COLUMNS = ("url_key", "status")
#: Crawl settings that change how the work is cut and placed, not what is fetched. They stay out of
#: the crawl stage's fingerprint: a rerun with other values must resume the committed shards, not
#: plan new ones over the same URLs.
CRAWL_EXECUTION_FIELDS = {"shard_size", "flush_every", "extract_workers", "ray_resources", "ray_num_cpus"}


def print_line(message: str) -> None:
    """One progress line, written in one call so that lines from the crawl and judge threads never mix."""
    sys.stdout.write(f"{message}\n")
    sys.stdout.flush()


class IncompleteRunError(RuntimeError):
    """A stage finished but its output is not complete (missing or duplicated rows)."""


@dataclass
class Audit:
    """One audit run: its config, its store and manifest, and the fingerprints of finished stages."""

    config: AuditConfig
    store: RunStore = field(init=False)
    manifest: RunManifest = field(init=False)
    fingerprints: dict[str, str] = field(default_factory=dict)
    log: Callable[[str], None] = print_line

    def __post_init__(self) -> None:
        self.store = RunStore(self.config.store.run)
        self.manifest = RunManifest.open(self.store)

    # -- stage bookkeeping ---------------------------------------------------------------------------
    def committed(self, stage: str, stage_fingerprint: str) -> bool:
        """Whether ``stage`` already committed its output for exactly these inputs and config."""
        self.fingerprints[stage] = stage_fingerprint
        if not self.store.is_done(STAGE_MARKERS, stage):
            return False
        marker = self.store.read_json(f"{STAGE_MARKERS}/_done/{stage}.json")
        return marker.get("fingerprint") == stage_fingerprint

    def run_stage(self, stage: str, stage_fingerprint: str, work: Callable[[], dict[str, Any]]) -> None:
        """Run ``work`` unless the stage is committed; record its counts and timing, then mark it done."""
        if self.committed(stage, stage_fingerprint):
            self.log(f"[{stage}] already committed, skipped")
            self.manifest.record_stage(stage, status="skipped", fingerprint=stage_fingerprint)
            return
        self.log(f"[{stage}] running")
        started, wall = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), time.monotonic()
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
        self.store.mark_done(STAGE_MARKERS, stage, {"fingerprint": stage_fingerprint, "wall_s": wall_s})
        self.log(f"[{stage}] done in {wall_s:.1f} s {_short(counts)}")

    # -- the pipeline --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Run every stage that is not committed yet; returns the run summary."""
        config = self.config
        input_hashes = {path: file_sha256(path) for path in [config.inputs.queries, *config.inputs.citations]}
        robots = {
            "obey_robots": config.crawl.network.obey_robots,
            "override": None if config.crawl.network.obey_robots else "crawl.network.obey_robots=false",
        }
        self.manifest.begin_attempt(config.to_dict(), input_hashes, robots)
        ensure_ray(config.cluster.ray)
        wall = time.monotonic()
        try:
            inputs_fp = fingerprint(input_hashes, config.inputs.system, config.scoring.model_dump())
            self.run_stage("inputs", inputs_fp, self.stage_inputs)
            crawl_fp = fingerprint(
                inputs_fp, config.crawl.model_dump(mode="json", exclude=CRAWL_EXECUTION_FIELDS)
            )
            judge_fp = fingerprint(crawl_fp, config.judge.model_dump(mode="json"))
            streaming = config.cluster.stream and not self.committed("crawl", crawl_fp)
            if streaming and not self.committed("judge", judge_fp):
                self.stage_crawl_and_judge_streaming(crawl_fp, judge_fp)
            else:
                self.run_stage("crawl", crawl_fp, self.stage_crawl)
                self.run_stage("judge", judge_fp, self.stage_judge)
            scores_fp = fingerprint(judge_fp)
            self.run_stage("scores", scores_fp, self.stage_scores)
            reduce_fp = fingerprint(scores_fp, config.reduce.model_dump(mode="json"))
            self.run_stage("reduce", reduce_fp, self.stage_reduce)
            if config.report is not None:
                self.run_stage("report", fingerprint(reduce_fp), self.stage_report)
        except BaseException:
            self.manifest.end_attempt("failed")
            raise
        summary = self.summary(time.monotonic() - wall)
        self.manifest.end_attempt("done", summary)
        return summary

    def stage_inputs(self) -> dict[str, Any]:
        """Read and validate the inputs, select the sources to audit, and keep copies in the run."""
        inputs = self.config.inputs
        queries = load_queries(inputs.queries)
        citations = load_citations(inputs.citations, system=inputs.system)
        serps = [load_serp(path, name, queries) for name, path in inputs.serp.items()]
        citations = pa.concat_tables([citations, *serps])
        selected = select_sources(citations, queries, self.config.scoring.top_k, ", ".join(inputs.citations))
        self.store.write_table(QUERIES_PATH, queries)
        self.store.write_table(CITATIONS_PATH, citations)
        self.store.write_table(SELECTED_PATH, selected)
        return {
            "queries": queries.num_rows,
            "citations": citations.num_rows,
            "systems": len(pc.unique(citations["system"])),
            "selected_sources": selected.num_rows,
            "distinct_urls": len(pc.unique(selected["url_key"])),
        }

    def selected(self) -> pa.Table:
        return self.store.read_table(SELECTED_PATH)

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
            judged_pages = pa.array([], pa.string())  # page ids judged in earlier passes
            while True:
                finished = not crawler.is_alive()
                if failure:
                    raise failure[0]
                shards = self.store.done_tasks(LAYOUT.crawl) - taken
                if shards:
                    taken |= shards
                    names = self.store.listdir(LAYOUT.pages, suffix=".parquet")
                    waiting.append(
                        page_index(self.store, [n for n in names if LAYOUT.shard_of_page_part(n) in shards])
                    )
                if waiting:
                    index = pa.concat_tables(waiting)
                    ids = page_ids(index)
                    aliases = ids.filter(pc.is_in(ids["page_id"], judged_pages))["url_key"]
                    index = index.filter(pc.invert(pc.is_in(index["url_key"], aliases)))
                    wanted = requests.filter(pc.is_in(requests["url_key"], index["url_key"]))
                    if wanted.num_rows >= self.config.cluster.stream_min_requests or finished:
                        self.log(f"[judge] streaming {wanted.num_rows} new page x query requests")
                        judge_run(self.store.uri, wanted, self.config.judge, index=index)
                        judged_pages = pa.concat_arrays([judged_pages, ids["page_id"].combine_chunks()])
                        waiting = []
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
        vectors = content_vectors(read_judgments(self.store.uri, VECTOR_COLUMNS))
        scores = score_sources(self.selected(), self.read_pages(), vectors)
        self.store.write_table(SCORES_PATH, scores)
        return {"sources": scores.num_rows, **status_counts(scores)}

    def stage_reduce(self) -> dict[str, Any]:
        summary = reduce_run(self.store.uri, self.config.reduce, self.config.cluster.ray)
        return {"sources": summary["sources"], "systems": summary["systems"]}

    def stage_report(self) -> dict[str, Any]:
        report = self.config.report
        if not report.serp_systems and self.config.inputs.serp:
            report = report.model_copy(update={"serp_systems": list(self.config.inputs.serp)})
        written = write_report(self.store.uri, config=report)
        return {"files": len(written)}

    # -- reading and checking stage outputs ----------------------------------------------------------
    def read_pages(self, columns: tuple[str, ...] | None = None) -> pa.Table:
        """Committed page records (all parts), optionally only some columns (the text is large)."""
        if not self.store.exists("pages"):
            return (
                PAGE_SCHEMA if columns is None else pa.schema([PAGE_SCHEMA.field(c) for c in columns])
            ).empty_table()
        dataset = ds.dataset(
            self.store.path("pages"), filesystem=self.store.fs, format="parquet", schema=PAGE_SCHEMA
        )
        return dataset.to_table(columns=list(columns) if columns else None)

    def cited_requests(self) -> pa.Table:
        """``url_key, query_id, query_text``: every selected source with the text of its query.

        Which of these pairs get judged is decided by :func:`judge.pairs.judge_pairs`, as everywhere.
        """
        queries = self.store.read_table(LAYOUT.queries).select(["query_id", "query"])
        queries = queries.rename_columns(["query_id", "query_text"])
        pairs = self.selected().select(["url_key", "query_id"])
        return pairs.join(queries, "query_id", join_type="inner").select(
            ["url_key", "query_id", "query_text"]
        )

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
        judgments = self.store.read_table(LAYOUT.judgments, schema=JUDGMENT_SCHEMA)
        final = judgments.filter(pc.is_in(judgments["status"], pa.array(FINAL_STATUSES)))
        keys = final.select(["url_key", "query_id", "stage", "judgment_key"])
        duplicates = (
            keys.num_rows - keys.group_by(keys.column_names, use_threads=False).aggregate([]).num_rows
        )
        ids = page_ids(self.read_pages(ALIAS_COLUMNS))
        vectors = page_vectors(content_vectors(judgments), ids)
        done = vectors[vectors["judge_status"] != "partial"]
        complete = set(zip(done["page_id"], done["query_id"], strict=True))
        wanted = set(pair_ids(judge_pairs(requests, self.read_pages(ALIAS_COLUMNS))))
        missing = wanted - complete
        if duplicates or missing:
            raise IncompleteRunError(
                f"judge output: {duplicates} judgments committed twice, {len(missing)} requests incomplete"
            )
        return {"requests": len(wanted), "judgments": judgments.num_rows, **token_totals(judgments)}

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


def token_totals(judgments: pa.Table) -> dict[str, int]:
    """Summed token counts of a judgments table (nulls count as 0)."""
    return {
        column: int(pc.sum(judgments[column]).as_py() or 0)
        for column in ("prompt_tokens", "cached_prompt_tokens", "output_tokens")
    }


def _short(counts: dict[str, Any]) -> str:
    flat = {k: v for k, v in counts.items() if not isinstance(v, list)}
    return str(flat) if flat else ""


def print_summary(store: RunStore, summary: dict[str, Any]) -> None:
    """The final report on stdout: statuses, tokens, timings, then the leaderboard table."""
    print("\n== audit summary ==")
    print(f"run:          {summary['run']}")
    print(f"wall time:    {summary['wall_s']:.1f} s  (per stage: {summary['stage_wall_s']})")
    print(f"pages:        {summary['pages']}  ({summary['pages_per_s']} pages/s crawled)")
    print(f"sources:      {summary['sources']}")
    print(f"page status:  {summary['page_status']}")
    print(f"judge status: {summary['judge_status']}")
    print(f"tokens:       {summary['tokens']}")
    if store.exists(LEADERBOARD_DATA):
        print("\n== leaderboard (weighted total, 0-100) ==")
        print_leaderboard(store.read_json(LEADERBOARD_DATA)["overall"])
        print(f"\nleaderboard files: {store.uri_of('leaderboard')}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML config (sections: store, inputs, crawl, judge, ...)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one config field (value parsed as YAML); repeatable",
    )
    parser.add_argument("--run", help="run directory URI (= --set store.run=...)")
    parser.add_argument("--queries", help="queries CSV (= --set inputs.queries=...)")
    parser.add_argument("--citations", nargs="+", help="citation files (= --set inputs.citations=[...])")
    parser.add_argument("--ray-address", help="Ray cluster (= --set cluster.ray.address=...)")


def config_from_args(args: argparse.Namespace) -> AuditConfig:
    overrides = list(args.overrides)
    if args.run:
        overrides.append(f"store.run={args.run}")
    if args.queries:
        overrides.append(f"inputs.queries={args.queries}")
    if args.citations:
        overrides.append(f"inputs.citations=[{', '.join(args.citations)}]")
    if args.ray_address:
        overrides.append(f"cluster.ray.address={args.ray_address}")
    return load_config(args.config, overrides)


def run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        audit = Audit(config)
        summary = audit.run()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_summary(audit.store, summary)
    return 0


if __name__ == "__main__":
    from jobs.cli import run_module

    run_module("audit")
