"""An end-to-end audit at scale: 50,000 citations over the loopback web, measured from outside.

The inputs: ``--systems`` systems answer ``--queries`` queries (the public SourceBench queries,
cycled, each copy its own query_id), each citing ``--per-answer`` URLs drawn from the query's pool
of ``--pool`` pages, so systems overlap as real ones do. The pages are served by the loopback web
of ``bench/crawl.py`` (``--hosts`` hosts on 127.0.1.x, ``--latency`` s per response), and the
whole audit runs as a user runs it: ``python -m jobs.cli audit --config C`` in a subprocess, on its
own local Ray, every citation audited (``scoring.top_k: null``), crawl and judge streaming, the
signals judge (``--relevance``), the reduce on Ray Data. Measured:

- wall time per stage (the audit's manifest) and in all;
- peak RSS of the audit process (the driver) and of its whole process tree (Ray, crawl shards,
  judge actors), sampled every 0.2 s;
- exactly once, read from the outputs: one page record per url_key, and exactly three final
  judgments (one per stage) per (page, query) pair judged, no judgment key twice.

Usage: ``.venv/bin/python bench/audit_scale.py [--queries 1000] [--systems 5] [--per-answer 10]``.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.crawl import start_web  # noqa: E402
from bench.judge_scale import TreeSampler, _cpu_model, _queries  # noqa: E402
from crawler.layout import LAYOUT  # noqa: E402


def write_inputs(folder: Path, args: argparse.Namespace, urls: list[str]) -> tuple[Path, Path, int]:
    """queries.csv and citations.jsonl; returns their paths and the number of citations."""
    public = _queries()
    rng = random.Random(0)
    queries = folder / "queries.csv"
    with queries.open("w") as handle:
        handle.write("query_id,query,query_type\n")
        for q in range(args.queries):
            text = public[q % len(public)][1].replace('"', "'")
            handle.write(f'q{q:05d},"{text} ({q // len(public) + 1})",HotpotQA\n')
    citations = folder / "citations.jsonl"
    count = 0
    with citations.open("w") as handle:
        for q in range(args.queries):
            pool = urls[q * args.pool : (q + 1) * args.pool]
            for s in range(args.systems):
                for rank, url in enumerate(rng.sample(pool, args.per_answer), start=1):
                    row = {"system": f"system-{s}", "query_id": f"q{q:05d}", "url": url, "rank": rank}
                    handle.write(json.dumps(row) + "\n")
                    count += 1
    return queries, citations, count


def exactly_once(run: Path) -> dict:
    """Duplicates in the outputs: page records per url_key, final judgments per (page, query, stage)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from crawler.base import RunStore
    from judge.run import FINAL_STATUSES, page_index, read_judgments

    pages = page_index(RunStore(str(run)))
    judgments = read_judgments(str(run), ["judgment_key", "url_key", "query_id", "stage", "status"])
    final = judgments.filter(pc.is_in(judgments["status"], pa.array(FINAL_STATUSES)))
    per_pair = final.group_by(["url_key", "query_id"]).aggregate(
        [("stage", "count_distinct"), ("stage", "count")]
    )
    return {
        "page_records": pages.num_rows,
        "page_url_keys": len(pc.unique(pages["url_key"])),
        "page_status": {r["values"]: r["counts"] for r in pc.value_counts(pages["status"]).to_pylist()},
        "judgment_rows": judgments.num_rows,
        "final_judgments": final.num_rows,
        "final_judgment_keys": len(pc.unique(final["judgment_key"])),
        "judged_pairs": per_pair.num_rows,
        "pairs_with_three_stages": pc.sum(pc.equal(per_pair["stage_count_distinct"], 3)).as_py(),
        "pairs_with_extra_rows": pc.sum(pc.greater(per_pair["stage_count"], 3)).as_py(),
        "judge_status": {r["values"]: r["counts"] for r in pc.value_counts(final["status"]).to_pylist()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--per-answer", type=int, default=10, help="Citations per (system, query).")
    parser.add_argument("--pool", type=int, default=12, help="Distinct pages a query's answers draw from.")
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--relevance", default="overlap", choices=["embedding", "overlap"])
    parser.add_argument("--num-cpus", type=int, default=4, help="Logical CPUs of the audit's local Ray.")
    parser.add_argument("--keep", help="Keep the run in this folder.")
    args = parser.parse_args()
    if args.per_answer > args.pool:
        parser.error("--per-answer must be at most --pool")

    hosts = [f"127.0.1.{i + 1}" for i in range(args.hosts)]
    web, port = start_web(hosts, args.latency, "synthetic")
    folder = Path(args.keep or tempfile.mkdtemp(prefix="sb-audit-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        pages = args.queries * args.pool
        urls = [f"http://{hosts[i % len(hosts)]}:{port}/page/{i}" for i in range(pages)]
        queries, citations, count = write_inputs(folder, args, urls)
        run = folder / "run"
        config = folder / "audit.yaml"
        config.write_text(
            json.dumps(
                {
                    "store": {"run": str(run)},
                    "inputs": {"queries": str(queries), "citations": [str(citations)]},
                    "crawl": {
                        "network": {"allowlist": hosts},
                        "politeness": {"per_host_concurrency": 2, "autothrottle": False},
                        "render": {"policy": "never"},
                    },
                    "judge": {"engine": "signals", "signals": {"relevance": args.relevance}},
                    "scoring": {"top_k": None},
                    "report": None,
                    "cluster": {"ray": {"num_cpus": args.num_cpus}, "stream": True},
                }
            )
        )
        env = {"RAY_AUTH_MODE": "disabled", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "HF_HUB_OFFLINE": "1"}
        command = [sys.executable, "-m", "jobs.cli", "audit", "--config", str(config)]
        started = time.perf_counter()
        proc = subprocess.Popen(
            command,
            cwd=REPO,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        sampler = TreeSampler(proc.pid)
        out, err = proc.communicate()
        wall = time.perf_counter() - started
        measured = sampler.stop()
        if proc.returncode != 0:
            print(out[-2000:], err[-3000:], sep="\n", file=sys.stderr)
            raise SystemExit(f"audit exited {proc.returncode}")
        manifest = json.loads((run / LAYOUT.manifest).read_text())
        stages = {name: info.get("wall_s") for name, info in manifest["stages"].items()}
        once = exactly_once(run)
    finally:
        web.kill()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    result = {
        "bench": "audit_scale",
        "cpu": _cpu_model(),
        "citations": count,
        "systems": args.systems,
        "queries": args.queries,
        "distinct_urls": once["page_url_keys"],
        "wall_s": round(wall, 1),
        "stage_wall_s": stages,
        "pages_per_s": round(once["page_url_keys"] / wall, 1),
        "citations_per_s": round(count / wall, 1),
        **measured,
        "exactly_once": once["page_records"] == once["page_url_keys"]
        and once["final_judgment_keys"] == once["final_judgments"]
        and once["pairs_with_extra_rows"] == 0
        and once["pairs_with_three_stages"] == once["judged_pairs"],
        **once,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
