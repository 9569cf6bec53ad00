"""The audit as a real Ray job: `ray start --head` on loopback (through cluster/local.sh), `ray job submit
--working-dir .`, the run store on a SeaweedFS S3 bucket; and a job killed mid-crawl and mid-judge that
completes on resubmission with no duplicate and no missing page or judgment row."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from crawler.storage import RunStore
from jobs.scoring import page_ids, page_vectors
from judge import content_vectors
from judge.run import FINAL_STATUSES
from tests.conftest import free_port, wait_for_port

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
LOCAL_SH = str(REPO / "cluster" / "local.sh")
RAY_PORTS = (
    "SB_RAY_PORT", "SB_DASHBOARD_PORT", "SB_CLIENT_PORT", "SB_NODE_MANAGER_PORT", "SB_OBJECT_MANAGER_PORT",
    "SB_METRICS_PORT", "SB_AGENT_LISTEN_PORT", "SB_AGENT_GRPC_PORT", "SB_RUNTIME_ENV_AGENT_PORT",
)  # fmt: skip
LEADERBOARD_FILES = (
    "source_metrics.csv", "query_metrics.csv", "leaderboard_overall.csv", "leaderboard_by_query_type.csv",
    "main_table.csv", "leaderboard_data.json", "report.html",
)  # fmt: skip

pytestmark = pytest.mark.slow


def start_ray_head(state: Path) -> dict:
    """``cluster/local.sh start ray`` with every port free-picked; returns the env it ran with."""
    ports = {name: str(free_port()) for name in RAY_PORTS}
    low = max(free_port(), 20000)
    env = {
        **os.environ,
        **ports,
        "SB_MIN_WORKER_PORT": str(low),
        "SB_MAX_WORKER_PORT": str(low + 199),
        "SB_NUM_CPUS": "4",
        "SB_LOCAL_DIR": str(state),
        "SB_VENV_BIN": str(VENV_BIN),
        "RAY_AUTH_MODE": "disabled",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    }
    started = subprocess.run([LOCAL_SH, "start", "ray"], env=env, capture_output=True, text=True, timeout=180)
    env["started"] = started
    return env


@pytest.fixture(scope="module")
def ray_cluster():
    """A Ray head on 127.0.0.1 with its own temp dir; yields the environment for submitting jobs.

    A free-picked port can be taken by another process before Ray binds it: one retry with new ports.
    """
    states = []
    for _attempt in range(2):
        # Short and under /tmp: Ray's AF_UNIX socket paths inside it must stay under 108 bytes.
        states.append(Path(tempfile.mkdtemp(prefix="sbr-", dir="/tmp")))
        env = start_ray_head(states[-1])
        started = env.pop("started")
        if started.returncode == 0:
            break
        subprocess.run([LOCAL_SH, "stop", "ray"], env=env, capture_output=True, timeout=120)
    try:
        logs = "".join(
            f"\n--- {p}\n{p.read_text()[-1500:]}"
            for p in states[-1].glob("ray/session_*/logs/dashboard*.err")
        )
        assert started.returncode == 0, started.stderr[-3000:] + logs
        wait_for_port("127.0.0.1", int(env["SB_DASHBOARD_PORT"]), timeout=60)
        env["RAY_ADDRESS"] = f"http://127.0.0.1:{env['SB_DASHBOARD_PORT']}"
        yield env
    finally:
        subprocess.run([LOCAL_SH, "stop", "ray"], env=env, capture_output=True, timeout=120)
        for state in states:
            shutil.rmtree(state, ignore_errors=True)


def submit(env: dict, seaweedfs: dict, run_uri: str, *extra: str) -> str:
    """Submit the demo audit through cluster/submit.sh without waiting; returns the submission id.

    The script ships the repository (cluster/runtime_env.yaml excludes .venv, runs, .git), records
    the git sha, and passes the S3 endpoint and credentials of the test's SeaweedFS to the job.
    """
    job_id = f"audit-{uuid.uuid4().hex[:8]}"
    s3 = {
        "AWS_ENDPOINT_URL": seaweedfs["endpoint"],
        "AWS_ACCESS_KEY_ID": seaweedfs["access_key"],
        "AWS_SECRET_ACCESS_KEY": seaweedfs["secret_key"],
    }
    command = [
        str(REPO / "cluster" / "submit.sh"), "--address", env["RAY_ADDRESS"], "--submission-id", job_id,
        "--no-wait", "--", "python", "-m", "jobs.audit", "--config", "jobs/configs/demo.yaml",
        "--run", run_uri, *extra,
    ]  # fmt: skip
    result = subprocess.run(command, env={**env, **s3}, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr + result.stdout
    return job_id


def job_status(env: dict, job_id: str) -> str:
    from ray.job_submission import JobSubmissionClient

    return str(JobSubmissionClient(env["RAY_ADDRESS"]).get_job_status(job_id).value)


def job_logs(env: dict, job_id: str) -> str:
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(env["RAY_ADDRESS"]).get_job_logs(job_id)


def wait_job(env: dict, job_id: str, timeout: float = 400) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = job_status(env, job_id)
        if status in {"SUCCEEDED", "FAILED", "STOPPED"}:
            return status
        time.sleep(1)
    raise TimeoutError(
        f"job {job_id} still {job_status(env, job_id)} after {timeout}s:\n{job_logs(env, job_id)}"
    )


def kill_when(env: dict, job_id: str, ready, timeout: float = 300) -> None:
    """Stop the job (SIGTERM, then SIGKILL) as soon as ``ready()`` holds while it runs."""
    from ray.job_submission import JobSubmissionClient

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            JobSubmissionClient(env["RAY_ADDRESS"]).stop_job(job_id)
            assert wait_job(env, job_id, timeout=120) in {"STOPPED", "FAILED"}
            return
        status = job_status(env, job_id)
        assert status in {"PENDING", "RUNNING"}, (
            f"job ended ({status}) before the kill:\n{job_logs(env, job_id)}"
        )
        time.sleep(0.2)
    raise TimeoutError(f"condition not reached in {timeout}s:\n{job_logs(env, job_id)}")


def assert_complete_run(store: RunStore) -> None:
    """One page row per selected URL, no judgment committed twice, every fetched source fully judged."""
    selected = store.read_table("inputs/selected_sources.parquet")
    pages = store.read_table("pages")
    keys = pages["url_key"].to_pylist()
    assert len(keys) == len(set(keys)), "duplicate page rows"
    assert set(selected["url_key"].to_pylist()) == set(keys), "missing or extra page rows"
    judgments = store.read_table("judgments")
    final = judgments.filter(pc.is_in(judgments["status"], pa.array(FINAL_STATUSES)))
    rows = list(
        zip(*(final[c].to_pylist() for c in ("url_key", "query_id", "stage", "judgment_key")), strict=True)
    )
    assert len(rows) == len(set(rows)), "a judgment committed twice"
    judged = dict(zip(*page_ids(pages).to_pydict().values(), strict=True))
    wanted = {
        (judged[k], q)
        for k, q in zip(*selected.select(["url_key", "query_id"]).to_pydict().values(), strict=True)
        if k in judged
    }
    frame = page_vectors(content_vectors(judgments), page_ids(pages))
    vectors = dict(
        zip(zip(frame["page_id"], frame["query_id"], strict=True), frame["judge_status"], strict=True)
    )
    assert wanted <= set(vectors) and all(vectors[pair] == "scored" for pair in wanted)
    scores = store.read_table("scores/source_scores.parquet").to_pylist()
    assert len(scores) == selected.num_rows
    assert all((r["judge_status"] == "scored") == (r["page_status"] == "ok") for r in scores)
    for name in LEADERBOARD_FILES:
        assert store.exists(f"leaderboard/{name}"), name


def test_audit_job_on_s3_writes_the_leaderboard(ray_cluster, seaweedfs, s3_bucket):
    run_uri = f"s3://{s3_bucket}/audits/demo"
    job_id = submit(ray_cluster, seaweedfs, run_uri)
    status = wait_job(ray_cluster, job_id)
    logs = job_logs(ray_cluster, job_id)
    assert status == "SUCCEEDED", logs
    store = RunStore(run_uri)
    assert_complete_run(store)
    overall = store.read_json("leaderboard/leaderboard_data.json")["overall"]
    assert {row["model_name"] for row in overall} == {
        "demo-careful",
        "demo-clickbait",
        "demo-mixed",
        "demo-serp",
    }
    assert "demo-careful" in logs and "leaderboard" in logs  # the table is printed at the end
    attempt = store.read_json("manifest.json")["attempts"][-1]
    assert attempt["status"] == "done"
    # The driver ran the venv's Python (the cluster was started with this venv on PATH).
    assert Path(attempt["python_executable"]).parent == VENV_BIN
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert store.read_json("manifest.json")["code_version"]["git"].startswith(sha)


def test_audit_job_killed_mid_crawl_and_mid_judge_completes_without_duplicates(
    ray_cluster, seaweedfs, s3_bucket
):
    run_uri = f"s3://{s3_bucket}/audits/killed"
    store = RunStore(run_uri)
    small_parts = [
        "--set", "crawl.shard_size=8", "--set", "crawl.flush_every=4", "--set", "judge.write_batch_size=6",
        "--set", "cluster.stream=false",
    ]  # fmt: skip

    def crawl_started() -> bool:
        return bool(store.listdir("pages", suffix=".parquet")) and not store.is_done("audit", "crawl")

    def judge_started() -> bool:
        return bool(store.listdir("judgments", suffix=".parquet")) and not store.is_done("audit", "judge")

    kill_when(ray_cluster, submit(ray_cluster, seaweedfs, run_uri, *small_parts), crawl_started)
    assert not store.is_done("audit", "crawl")
    kill_when(ray_cluster, submit(ray_cluster, seaweedfs, run_uri, *small_parts), judge_started)
    assert store.is_done("audit", "crawl") and not store.is_done("audit", "judge")
    job_id = submit(ray_cluster, seaweedfs, run_uri, *small_parts)
    assert wait_job(ray_cluster, job_id) == "SUCCEEDED", job_logs(ray_cluster, job_id)
    assert_complete_run(store)
    manifest = store.read_json("manifest.json")
    assert [a["status"] for a in manifest["attempts"]][-1] == "done"
    assert manifest["stages"]["crawl"]["status"] == "skipped"  # the second attempt committed it
