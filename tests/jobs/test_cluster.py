"""Cluster definitions: the AWS autoscaler YAML passes Ray's own validator, the KubeRay RayJob and the
runtime_env are consistent with the audit configs, and the loopback dev script really serves S3."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import yaml

from jobs.config import load_config
from tests.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "cluster"


def test_aws_autoscaler_config_is_valid_for_ray_and_matches_the_cluster_audit_config():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(yaml.safe_load((CLUSTER / "aws.yaml").read_text()))
    validate_config(config)  # Ray's JSON schema: raises on any unknown or malformed field
    types = config["available_node_types"]
    assert types[config["head_node_type"]]["resources"] == {"CPU": 0}  # the head runs drivers only
    audit = load_config(str(REPO / "jobs" / "configs" / "cluster.yaml"))
    for resource in audit.crawl.ray_resources:
        offering = [name for name, t in types.items() if resource in t["resources"]]
        assert offering == ["crawl_cpu"], resource
    accelerator = f"accelerator_type:{audit.judge.vllm.accelerator_type}"
    assert [name for name, t in types.items() if accelerator in t["resources"]] == ["judge_gpu"]
    assert types["judge_gpu"]["resources"]["GPU"] >= 1 and "GPU" not in types["crawl_cpu"]["resources"]
    assert {".venv", "runs", ".git"} <= set(config["rsync_exclude"])


def test_kuberay_rayjob_runs_the_audit_with_separate_crawl_and_judge_groups():
    job = yaml.safe_load((CLUSTER / "rayjob.yaml").read_text())
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    entry = job["spec"]["entrypoint"].split()
    assert entry[:3] == ["python", "-m", "jobs.audit"]
    config_path = entry[entry.index("--config") + 1]
    assert load_config(str(REPO / config_path)).judge.engine == "vllm"
    groups = {g["groupName"]: g for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]}
    assert "crawler" in groups["crawl-cpu"]["rayStartParams"]["resources"]
    judge_container = groups["judge-gpu"]["template"]["spec"]["containers"][0]
    assert (
        judge_container["resources"]["limits"]["nvidia.com/gpu"]
        == groups["judge-gpu"]["rayStartParams"]["num-gpus"]
    )
    assert job["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"


def test_runtime_env_is_valid_and_leaves_local_state_out():
    from ray.runtime_env import RuntimeEnv

    spec = yaml.safe_load((CLUSTER / "runtime_env.yaml").read_text())
    RuntimeEnv(**spec, working_dir=str(REPO))  # Ray validates the fields
    assert {".venv/", "runs/", ".git/"} <= set(spec["excludes"])


def test_local_script_serves_s3_on_loopback_and_stops_what_it_started(tmp_path):
    import boto3

    ports = {
        name: str(free_port())
        for name in (
            "SB_S3_PORT", "SB_WEED_MASTER_PORT", "SB_WEED_VOLUME_PORT", "SB_WEED_FILER_PORT",
            "SB_WEED_MASTER_GRPC_PORT", "SB_WEED_VOLUME_GRPC_PORT", "SB_WEED_FILER_GRPC_PORT",
            "SB_WEED_S3_GRPC_PORT",
        )
    }  # fmt: skip
    bucket = f"sb-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, **ports, "SB_LOCAL_DIR": str(tmp_path), "SB_BUCKET": bucket}
    script = str(CLUSTER / "local.sh")
    started = subprocess.run([script, "start", "s3"], env=env, capture_output=True, text=True, timeout=120)
    try:
        assert started.returncode == 0, started.stderr
        exports = dict(
            line.removeprefix("export ").split("=", 1) for line in started.stdout.splitlines() if "=" in line
        )
        assert exports["AWS_ENDPOINT_URL"] == f"http://127.0.0.1:{ports['SB_S3_PORT']}"
        client = boto3.client(
            "s3",
            endpoint_url=exports["AWS_ENDPOINT_URL"],
            aws_access_key_id=exports["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=exports["AWS_SECRET_ACCESS_KEY"],
            region_name="us-east-1",
        )
        client.put_object(Bucket=bucket, Key="probe.txt", Body=b"hello")
        assert client.get_object(Bucket=bucket, Key="probe.txt")["Body"].read() == b"hello"
        pid = int((tmp_path / "weed.pid").read_text())
    finally:
        subprocess.run([script, "stop", "s3"], env=env, capture_output=True, timeout=60)
    assert not (tmp_path / "weed.pid").exists()
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
