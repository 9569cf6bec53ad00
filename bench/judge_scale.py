"""Judge at corpus scale: driver memory and throughput of ``sourcebench judge`` on 10k-160k pages.

Synthetic corpora: the real shared pages (extracted as a crawl would) replicated under distinct
url_keys and URLs, each copy's text varied (an edition line in front, so every copy has its own
content hash and is judged on its own), written as page parts of ``--part-size`` pages like a crawl,
one citing query per page. Each size is judged with the signals engine by the real CLI
(``python -m jobs.judge --run R --requests Q --engine signals``) in a subprocess, on Ray with
``--workers`` unit actors; the process tree is sampled every 0.2 s:

- ``driver_rss_mb``: peak RSS of the CLI process (the driver, which holds only the plan);
- ``tree_rss_mb``: peak summed RSS of the driver and every process under it (Ray, the actors);
- ``pages_per_s``: pages judged per wall second; ``pages_per_cpu_s``: per CPU second of the tree;
- the plan and judge times from the judge's own summary.

Worker scaling (``--scaling-pages``, 1 then 2 unit actors) is reported two ways, because this machine
is shared: wall-clock (``worker_scaling``) and from CPU time (``worker_scaling_cpu``: the wall speed-up
the same CPU seconds would give on idle cores, = 2 x CPU efficiency of 2 workers / CPU efficiency of 1),
with the load average during each run.

Usage: ``.venv/bin/python bench/judge_scale.py [--sizes 10000 40000 160000] [--scaling-pages 10000]``.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
sys.path.insert(0, str(REPO))


def build_corpus(
    root: Path, base, pages: int, part_size: int, queries: list[tuple[str, str]]
) -> tuple[str, str]:
    """Write ``pages`` replicated page records as parts, and a requests file; returns (run, requests)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from crawler.layout import LAYOUT

    run = root / f"run-{pages}"
    (run / LAYOUT.pages).mkdir(parents=True)
    requests = []
    for start in range(0, pages, part_size):
        ids = list(range(start, min(start + part_size, pages)))
        table = base.take(pa.array([i % base.num_rows for i in ids]))
        keys = pa.array([f"p{i:08d}" for i in ids])
        urls = pa.array([f"https://site{i % 997}.example.org/article/{i}" for i in ids])
        edition = pa.array([f"Edition {i}." for i in ids])
        replace = {
            "url_key": keys,
            "url": urls,
            "final_url": urls,
            "content_sha256": pa.array([f"{i:064x}" for i in ids]),
            "text_full": pc.binary_join_element_wise(edition, table["text_full"], "\n"),
            "text_main": pc.binary_join_element_wise(edition, table["text_main"], "\n"),
        }
        for name, column in replace.items():
            table = table.set_column(table.schema.get_field_index(name), table.schema.field(name), column)
        stem = LAYOUT.part_stem(f"shard-{start // part_size:05d}", 0)
        pq.write_table(table, run / LAYOUT.page_part(f"{stem}.parquet"), compression="zstd")
        for i in ids:
            query_id, text = queries[i % len(queries)]
            requests.append({"url_key": f"p{i:08d}", "query_id": query_id, "query_text": text})
    path = root / f"requests-{pages}.parquet"
    pq.write_table(pa.Table.from_pylist(requests), path)
    return str(run), str(path)


class TreeSampler:
    """Peak RSS of a process and of its whole tree, and the tree's CPU seconds, sampled every 0.2 s."""

    def __init__(self, pid: int):
        import psutil

        self.root = psutil.Process(pid)
        self.driver_rss = self.tree_rss = 0
        self.cpu: dict[int, float] = {}
        self.loads: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
                total = 0
                for proc in procs:
                    try:
                        total += proc.memory_info().rss
                        times = proc.cpu_times()
                        self.cpu[proc.pid] = max(self.cpu.get(proc.pid, 0.0), times.user + times.system)
                    except psutil.Error:
                        continue
                self.driver_rss = max(self.driver_rss, self.root.memory_info().rss)
                self.tree_rss = max(self.tree_rss, total)
                self.loads.append(os.getloadavg()[0])
            except psutil.Error:
                pass
            self._stop.wait(0.2)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {
            "driver_rss_mb": round(self.driver_rss / 2**20, 1),
            "tree_rss_mb": round(self.tree_rss / 2**20, 1),
            "tree_cpu_s": round(sum(self.cpu.values()), 2),
            "load_avg": round(sum(self.loads) / max(len(self.loads), 1), 2),
        }


def judge(run: str, requests: str, workers: int, relevance: str, tmp: Path) -> dict:
    """One ``sourcebench judge`` in a subprocess, measured; retried when Ray fails to start.

    Ray gives its node 30 s to register; on a heavily loaded machine that start can time out before
    anything is judged, and then the run is simply started again.
    """
    for _attempt in range(4):
        try:
            return _judge_once(run, requests, workers, relevance, tmp)
        except RuntimeError as exc:
            if "timed out during startup" not in str(exc):
                raise
            print("ray did not start in time; starting again", file=sys.stderr, flush=True)
    raise RuntimeError("ray did not start in four attempts")


def _judge_once(run: str, requests: str, workers: int, relevance: str, tmp: Path) -> dict:
    config = tmp / f"judge-{relevance}.yaml"
    config.write_text(
        f"judge:\n  engine: signals\n  signals: {{relevance: {relevance}}}\n"
        "  prompts: {current_date: 2026-01-25}\n  write_batch_size: 2048\n"
    )
    ray_tmp = tempfile.mkdtemp(prefix="sbjs-", dir="/tmp")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_TMPDIR": ray_tmp, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    command = [
        sys.executable, "-m", "jobs.judge", "--run", run, "--requests", requests, "--config", str(config),
        "--executor", "ray", "--workers", str(workers), "--num-cpus", str(max(workers, 2)),
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sampler = TreeSampler(proc.pid)
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    measured = sampler.stop()
    shutil.rmtree(ray_tmp, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"judge failed ({proc.returncode}):\n{err[-3000:]}")
    summary = json.loads(out[out.index("{") :])
    return {**measured, "wall_s": round(wall, 2), "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 40_000, 160_000])
    parser.add_argument("--scaling-pages", type=int, default=10_000)
    parser.add_argument("--part-size", type=int, default=1000, help="Pages per page part (one unit).")
    parser.add_argument("--workers", type=int, default=2, help="Unit actors for the size series.")
    parser.add_argument("--relevance", default="embedding", choices=["embedding", "overlap"])
    parser.add_argument("--keep", help="Keep the corpora in this folder.")
    args = parser.parse_args()

    import pyarrow.compute as pc

    from tests.support.sample_pages import sample_page_records

    base = sample_page_records(SHARED, limit=120)
    base = base.filter(pc.equal(base["status"], "ok"))
    queries = _queries()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="sb-judge-scale-"))
    tmp.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "cpu": _cpu_model(),
        "base_pages": base.num_rows,
        "relevance": args.relevance,
        "sizes": {},
    }
    try:
        for pages in args.sizes:
            run, requests = build_corpus(tmp, base, pages, args.part_size, queries)
            measured = judge(run, requests, args.workers, args.relevance, tmp)
            summary = measured.pop("summary")
            measured["pages_per_s"] = round(pages / measured["wall_s"], 1)
            measured["pages_per_cpu_s"] = round(pages / measured["tree_cpu_s"], 2)
            measured["plan_s"], measured["judge_s"] = summary.get("plan_s"), summary.get("judge_s")
            measured["statuses"] = summary["statuses"]
            results["sizes"][pages] = measured
            print(json.dumps({"pages": pages, **measured}), flush=True)
            if pages != args.scaling_pages:
                shutil.rmtree(run, ignore_errors=True)
        scaling = {}
        run, requests = build_corpus(tmp / "scaling", base, args.scaling_pages, args.part_size, queries)
        for workers in (1, 2):
            fresh = f"{run}-w{workers}"
            shutil.copytree(run, fresh)
            measured = judge(fresh, requests, workers, args.relevance, tmp)
            measured.pop("summary")
            measured["pages_per_s"] = round(args.scaling_pages / measured["wall_s"], 1)
            measured["pages_per_cpu_s"] = round(args.scaling_pages / measured["tree_cpu_s"], 2)
            scaling[workers] = measured
            print(json.dumps({"workers": workers, **measured}), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    sizes = results["sizes"]
    first, last = min(sizes), max(sizes)
    results.update(
        {
            "driver_rss_mb": {n: v["driver_rss_mb"] for n, v in sizes.items()},
            "tree_rss_mb": {n: v["tree_rss_mb"] for n, v in sizes.items()},
            "driver_rss_growth": round(sizes[last]["driver_rss_mb"] / sizes[first]["driver_rss_mb"], 3),
            "pages_per_s": {f"workers_{w}": v["pages_per_s"] for w, v in scaling.items()},
            "pages_per_cpu_s": {f"workers_{w}": v["pages_per_cpu_s"] for w, v in scaling.items()},
            "worker_scaling": round(scaling[2]["pages_per_s"] / scaling[1]["pages_per_s"], 3),
            "worker_scaling_cpu": round(2 * scaling[2]["pages_per_cpu_s"] / scaling[1]["pages_per_cpu_s"], 3),
            "load_avg": {f"workers_{w}": v["load_avg"] for w, v in scaling.items()},
        }
    )
    print(json.dumps(results))


def _queries() -> list[tuple[str, str]]:
    import csv

    with open(SHARED / "sourcebench" / "sourcebench_public_queries_v1.csv", newline="") as handle:
        return [(row["query_id"], row["query"]) for row in csv.DictReader(handle)]


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
