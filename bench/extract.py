"""Extraction benchmark: pages/s per core (CPU time) of ``extract_page`` on the shared real pages, with the
CPU time of each stage, side by side with a baseline version of the code in the same run.

The pages are those of ``../shared/data/pages/{aeb,htmldate,trafilatura}`` (348), each extracted with its
real URL (``--fixed-url`` gives every page ``https://example.com/page``, as bench/crawl.py did before).
Each measurement runs in its own process, ours and the baseline alternately (``--rounds`` of each), so that
both see the same load. A process first extracts other pages (the 88 readability pages: the one-off costs
of lazy imports and dateparser's locale patterns, reported as the cold ``first_pass``), then the measured
pages once. Not the same pages twice: a second pass hits htmldate's and trafilatura's caches of date
strings and text lines, which a crawl of distinct pages rarely does, and looks faster than a crawl runs.

The baseline is the ``crawler/`` package of a git ref (``--baseline-ref``, default ``main``), exported
into a temporary folder; ``--baseline-ref none`` measures ours only. ``records_identical`` counts the pages
whose records (every field) are the same in both versions. The last output line is one JSON object.

    .venv/bin/python bench/extract.py [--rounds 3] [--baseline-ref main] [--fixed-url]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import inspect
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_PAGES = REPO.parent / "shared" / "data" / "pages"
PAGE_SETS = ("aeb", "htmldate", "trafilatura")
FIXED_URL = "https://example.com/page"


def shared_pages(fixed_url: bool = False) -> list[tuple[str, bytes]]:
    """(URL, body) of every page of the measured shared sets, in a stable order."""
    pages = []
    for name in PAGE_SETS:
        folder = SHARED_PAGES / name
        truth = json.loads((folder / "ground_truth.json").read_text())
        for path in sorted((folder / "html").glob("*.gz")):
            key = path.name.removesuffix(".gz")
            item = truth.get(key) or truth.get(key.removesuffix(".html")) or {}
            url = FIXED_URL if fixed_url else item.get("url") or FIXED_URL
            pages.append((url, gzip.decompress(path.read_bytes())))
    return pages


def warmup_pages() -> list[tuple[str, bytes]]:
    """Other real pages (the readability set), extracted before the measured pass."""
    folders = sorted((SHARED_PAGES / "readability").iterdir())
    return [(FIXED_URL, (f / "source.html").read_bytes()) for f in folders if (f / "source.html").exists()]


def extraction_rate(pages: list[tuple[str, bytes]], warmup: list[tuple[str, bytes]] | None = None) -> dict:
    """Pages/s per core (CPU time) of ``crawler.extract.extract_page`` over ``pages``.

    ``warmup`` pages are extracted first, untimed except as ``first_pass`` (pages/s/core of a cold
    process: lazy imports, dateparser compiling its locale patterns). They must be other pages than
    the measured ones: extracting the same pages twice hits htmldate's and trafilatura's caches of
    date strings and text lines, which a crawl of distinct pages rarely does.

    Returns ``pages``, ``rate`` (pages/s/core of the measured pass), ``first_pass``, ``stage_ms``
    (CPU ms per page of each stage, when the code measures stages) and ``digests`` (a hash of each
    page's record, to compare two versions of the code).
    """
    from crawler.extract import extract_page

    StageTimes = None  # noqa: N806 (a baseline from before the stage timer has none)
    if "times" in inspect.signature(extract_page).parameters:
        from crawler.stagetimes import StageTimes
    first_pass = None
    if warmup:
        started = time.process_time()
        for url, body in warmup:
            extract_page(url, body, "text/html")
        first_pass = round(len(warmup) / (time.process_time() - started), 1)
    times = StageTimes() if StageTimes else None
    kwargs = {"times": times} if times else {}
    started = time.process_time()
    records = [extract_page(url, body, "text/html", **kwargs) for url, body in pages]
    rate = round(len(pages) / (time.process_time() - started), 1)
    digests = [
        hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()[:16]
        for record in records
    ]
    stage_ms = {}
    if times:
        stage_ms = {stage: round(1000 * s / len(pages), 3) for stage, s in times.seconds.most_common()}
    return {
        "pages": len(pages),
        "rate": rate,
        "first_pass": first_pass,
        "stage_ms": stage_ms,
        "digests": digests,
    }


def _worker(root: str, fixed_url: bool, out: str) -> None:
    """Measure the ``crawler`` package found under ``root`` (this process imports nothing else first)."""
    sys.path.insert(0, root)
    result = extraction_rate(shared_pages(fixed_url), warmup_pages())
    import crawler

    if not crawler.__file__.startswith(str(Path(root).resolve())):
        raise RuntimeError(f"measured {crawler.__file__}, not the code under {root}")
    Path(out).write_text(json.dumps(result))


def _measure(root: Path, fixed_url: bool) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(root), "--out", out.name]
        subprocess.run(command + (["--fixed-url"] if fixed_url else []), check=True, cwd=root)
        return json.loads(Path(out.name).read_text())


def _resolves(ref: str) -> bool:
    command = ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"]
    return subprocess.run(command, capture_output=True).returncode == 0


def _export(ref: str, into: Path) -> Path:
    """The ``crawler/`` package of git ``ref``, exported under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "crawler"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="processes per version, alternating")
    parser.add_argument("--baseline-ref", default="main", help="git ref of the baseline, or 'none'")
    parser.add_argument(
        "--fixed-url", action="store_true", help="extract every page as https://example.com/page"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.fixed_url, args.out)
        return

    load_before = os.getloadavg()[0]
    ours_runs, base_runs = [], []
    with tempfile.TemporaryDirectory(prefix="sbbench-extract") as temp:
        base_root = None
        if args.baseline_ref != "none" and _resolves(args.baseline_ref):
            base_root = _export(args.baseline_ref, Path(temp))
        elif args.baseline_ref != "none":
            print(f"baseline ref {args.baseline_ref!r} not found in this checkout: ours only", flush=True)
        for round_ in range(args.rounds):
            order = [("ours", REPO), ("baseline", base_root)]
            for name, root in order if round_ % 2 == 0 else order[::-1]:
                if root is None:
                    continue
                result = _measure(root, args.fixed_url)
                (ours_runs if name == "ours" else base_runs).append(result)
                print(f"{name}: {result['rate']} pages/s/core (cold: {result['first_pass']})", flush=True)
    best = max(ours_runs, key=lambda run: run["rate"])
    ours = statistics.median(run["rate"] for run in ours_runs)
    stage_ms = best["stage_ms"]
    total_ms = sum(stage_ms.values()) or 1.0
    for stage, ms in stage_ms.items():
        print(f"  {stage:10s} {ms:7.3f} ms/page  {100 * ms / total_ms:5.1f} %")
    result = {
        "bench": "extract",
        "pages": best["pages"],
        "urls": "fixed" if args.fixed_url else "real",
        "extraction_pages_per_s_per_core": ours,
        "extraction_first_pass_pages_per_s_per_core": statistics.median(
            run["first_pass"] for run in ours_runs
        ),
        "stage_cpu_ms_per_page": stage_ms,
        "stage_share": {stage: round(ms / total_ms, 3) for stage, ms in stage_ms.items()},
        "rounds": args.rounds,
    }
    if base_runs:
        baseline = statistics.median(run["rate"] for run in base_runs)
        same = sum(a == b for a, b in zip(best["digests"], base_runs[0]["digests"], strict=True))
        result.update(
            baseline_ref=args.baseline_ref,
            baseline_pages_per_s_per_core=baseline,
            speedup=round(ours / baseline, 3),
            records_identical=same,
        )
    result.update(
        cpu=_cpu_model(),
        cpu_count=os.cpu_count(),
        load_average_1m=[round(load_before, 2), round(os.getloadavg()[0], 2)],
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
