"""The run manifest: ``<run>/manifest.json``, what a run was made from and what each stage did.

It records the full config, the code version, a SHA-256 of every input file, per-stage counts and
timings, and every attempt (a resumed run appends an attempt instead of overwriting history). It is
rewritten atomically after each stage, so a killed run leaves the manifest of its last finished stage.

Fields: ``run``, ``created_at``, ``code_version`` (``git`` sha, ``dirty``, ``package``), ``config``,
``inputs`` (path -> sha256), ``robots`` (whether robots.txt was obeyed, and who overrode it),
``stages`` (name -> ``{status, fingerprint, started_at, finished_at, wall_s, counts}``),
``attempts`` (list of ``{started_at, finished_at, status, host, python, python_executable, ray}``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from crawler.base import InputError, RunStore, resolve_uri
from crawler.layout import LAYOUT

#: Set by cluster/submit.sh: a `ray job submit` working dir ships without .git.
CODE_VERSION_ENV = "SOURCEBENCH_CODE_VERSION"
REPO = Path(__file__).resolve().parents[1]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def code_version() -> dict[str, Any]:
    """The git commit of the code (and whether the tree was dirty), or what the environment says."""
    version: dict[str, Any] = {"package": _package_version(), "git": os.environ.get(CODE_VERSION_ENV)}
    if version["git"]:
        return version
    try:
        git = ["git", "-C", str(REPO)]
        sha = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        version.update(git=sha, dirty=bool(status.strip()))
    except (OSError, subprocess.SubprocessError):
        version["git"] = None  # not a checkout (e.g. a Ray working_dir upload without .git)
    return version


def _package_version() -> str | None:
    try:
        return metadata.version("sourcebench")
    except metadata.PackageNotFoundError:
        return None


def file_sha256(path: str) -> str:
    """SHA-256 of a local or ``s3://`` file, streamed.

    Raises:
        InputError: the file does not exist.
    """
    fs, inner = resolve_uri(path)
    if fs.get_file_info(inner).type != pafs.FileType.File:
        raise InputError(path, "file not found")
    digest = hashlib.sha256()
    with fs.open_input_stream(inner) as src:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint(*parts: Any) -> str:
    """A short stable hash of JSON-able parts (config sections, input hashes, upstream fingerprints)."""
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@dataclass
class RunManifest:
    """The manifest of one run, kept in memory and saved to the store after every change."""

    store: RunStore
    data: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Stages may finish in parallel threads (streaming crawl + judge)."""

    @classmethod
    def open(cls, store: RunStore) -> RunManifest:
        """Load the run's manifest, or start an empty one."""
        data = store.read_json_if_present(LAYOUT.manifest) or {}
        data.setdefault("run", store.uri)
        data.setdefault("created_at", now_iso())
        data.setdefault("stages", {})
        data.setdefault("attempts", [])
        return cls(store, data)

    def save(self) -> None:
        with self.lock:
            self.store.write_json(LAYOUT.manifest, self.data)

    def begin_attempt(self, config: dict[str, Any], inputs: dict[str, str], robots: dict[str, Any]) -> None:
        """Record the config, code version and input hashes of this attempt, and open it."""
        self.data.update(config=config, code_version=code_version(), inputs=inputs, robots=robots)
        for attempt in self.data["attempts"]:
            if attempt["status"] == "running":  # its process was killed before it could say so
                attempt["status"] = "interrupted"
        self.data["attempts"].append(
            {
                "started_at": now_iso(),
                "finished_at": None,
                "status": "running",
                "host": socket.gethostname(),
                "python": sys.version.split()[0],
                "python_executable": sys.executable,
                "platform": platform.platform(),
                "ray": metadata.version("ray"),
            }
        )
        self.save()

    def stage(self, name: str) -> dict[str, Any]:
        return self.data["stages"].get(name, {})

    def record_stage(self, name: str, **info: Any) -> None:
        with self.lock:
            self.data["stages"][name] = {**self.data["stages"].get(name, {}), **info}
        self.save()

    def end_attempt(self, status: str, summary: dict[str, Any] | None = None) -> None:
        attempt = self.data["attempts"][-1]
        attempt.update(finished_at=now_iso(), status=status)
        if summary is not None:
            self.data["summary"] = summary
        self.save()
