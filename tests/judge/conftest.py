"""Fixtures of the judge tests: real page records, run directories, a tiny vLLM model, local Ray."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

from crawler.schema import PAGE_SCHEMA
from crawler.storage import RunStore
from tests.support.sample_pages import sample_page_records
from tests.support.tiny_model import build_tiny_qwen2

QUERIES = (
    ("q1", "When was the article published and who wrote it?"),
    ("q2", "What are the health effects of drinking coffee?"),
)


@pytest.fixture(scope="session")
def page_records(shared_data: Path) -> pa.Table:
    """Real page records (crawler extraction over ../shared/data pages) plus two non-ok pages."""
    pages = sample_page_records(shared_data, limit=40)
    failed = [
        {"url_key": "failed-timeout", "url": "https://slow.example.org/a", "status": "timeout",
         "error": "read timeout after 30 s"},
        {"url_key": "failed-robots", "url": "https://blocked.example.com/b", "status": "robots_disallowed",
         "error": "robots.txt disallows /b"},
    ]  # fmt: skip
    return pa.concat_tables([pages, pa.Table.from_pylist(failed, schema=PAGE_SCHEMA)])


def write_run(root: Path, pages: pa.Table) -> str:
    run = str(root / "run")
    RunStore(run).write_table("pages/part-00000.parquet", pages)
    return run


def requests_for(pages: pa.Table, queries=QUERIES, limit: int | None = None) -> pa.Table:
    keys = pages["url_key"].to_pylist()[:limit]
    rows = [{"url_key": k, "query_id": qid, "query_text": text} for k in keys for qid, text in queries]
    return pa.Table.from_pylist(rows)


@pytest.fixture
def run_uri(tmp_path: Path, page_records: pa.Table) -> str:
    return write_run(tmp_path, page_records)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, page_records: pa.Table) -> Path:
    """A random 2-layer Qwen2 whose BPE tokenizer was trained on the page texts."""
    texts = [t for t in page_records["text_full"].to_pylist() if t]
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny-qwen2"), vocab_size=4096, corpus=texts)


@pytest.fixture(scope="module")
def local_ray():
    """In-process Ray with 8 logical CPUs (vLLM CPU under Ray Data LLM deadlocks with 2)."""
    import ray

    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")
    temp = tempfile.mkdtemp(prefix="sbj-ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    ray.init(
        num_cpus=8,
        include_dashboard=False,
        _temp_dir=str(temp),
        runtime_env={"env_vars": {"VLLM_CPU_KVCACHE_SPACE": "2"}},
        log_to_driver=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


OFFICIAL_DATE = dt.date(2026, 1, 25)


@pytest.fixture(scope="module")
def vllm_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """A real ``vllm serve`` (OpenAI-compatible API) on a free loopback port, serving the tiny model.

    Yields ``(base_url, served_model_name)``. Started once per module; killed at teardown.
    """
    from tests.support.serve import STRUCTURED_OUTPUTS, openai_server

    log_path = tmp_path_factory.mktemp("vllm-serve") / "serve.log"
    extra = ["--enable-prompt-tokens-details", "--structured-outputs-config", STRUCTURED_OUTPUTS]
    with openai_server(tiny_model, log_path, "tiny-qwen2", 8192, extra) as base_url:
        yield base_url, "tiny-qwen2"
