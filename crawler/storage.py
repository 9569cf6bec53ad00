"""The run store: one root URI (local directory or ``s3://bucket/prefix``) holding run directories.

This is the lowest layer of the project; every stage (crawl, judge, reduce) reads and writes through it.

Atomicity: a local write goes to a temporary sibling and is renamed into place; an S3 object only
becomes visible when its upload completes. A table is therefore either absent or complete, and a
stage marks a finished unit of work with a small ``_done/<task>.json`` marker written last, so a
rerun skips what was committed (the datatrove pattern).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from crawler.layout import LAYOUT


def s3_filesystem(endpoint_url: str | None = None, region: str | None = None) -> pafs.S3FileSystem:
    """Build a pyarrow S3 filesystem that honours ``AWS_ENDPOINT_URL`` and the standard credential chain.

    Args:
        endpoint_url: An S3-compatible endpoint (SeaweedFS, MinIO, R2...). Defaults to
            ``$AWS_ENDPOINT_URL_S3`` or ``$AWS_ENDPOINT_URL``; unset means AWS itself.
        region: The bucket region; defaults to ``$AWS_REGION``/``$AWS_DEFAULT_REGION`` or us-east-1.
    """
    endpoint_url = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    kwargs: dict[str, Any] = {"region": region}
    if endpoint_url:
        parsed = urlparse(endpoint_url)
        kwargs["endpoint_override"] = parsed.netloc or parsed.path
        kwargs["scheme"] = parsed.scheme or "http"
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        kwargs.update(access_key=key, secret_key=secret, session_token=os.environ.get("AWS_SESSION_TOKEN"))
    return pafs.S3FileSystem(**kwargs)


def resolve_uri(uri: str) -> tuple[pafs.FileSystem, str]:
    """Split a store URI into a filesystem and a base path inside it."""
    if uri.startswith("s3://"):
        parsed = urlparse(uri)
        return s3_filesystem(), (parsed.netloc + parsed.path).rstrip("/")
    if uri.startswith("file://"):
        uri = uri[len("file://") :]
    return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(uri))


@dataclass
class RunStore:
    """A run directory inside a store root: ``<root>/<run>/...``.

    Args:
        uri: The run directory's URI, e.g. ``runs/demo`` or ``s3://bucket/audits/2026-12``.
    """

    uri: str

    def __post_init__(self) -> None:
        self.fs, self.base = resolve_uri(self.uri)
        self.is_local = isinstance(self.fs, pafs.LocalFileSystem)

    # -- paths -------------------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        """The filesystem path of a file inside the run."""
        return posixpath.join(self.base, *parts) if parts else self.base

    def uri_of(self, *parts: str) -> str:
        """A URI (``s3://...`` or a local path) for tools that take URIs, such as Ray Data."""
        path = self.path(*parts)
        return f"s3://{path}" if not self.is_local else path

    def exists(self, *parts: str) -> bool:
        return self.fs.get_file_info(self.path(*parts)).type != pafs.FileType.NotFound

    def listdir(self, *parts: str, suffix: str = "") -> list[str]:
        """Names (not paths) of the files directly under a run folder, sorted; empty if it is absent."""
        selector = pafs.FileSelector(self.path(*parts), allow_not_found=True, recursive=False)
        names = [
            posixpath.basename(info.path)
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
        ]
        return sorted(n for n in names if n.endswith(suffix) and not n.startswith((".", "_tmp")))

    def _ensure_parent(self, path: str) -> None:
        if self.is_local:
            self.fs.create_dir(posixpath.dirname(path), recursive=True)

    # -- atomic writes -----------------------------------------------------------------------------
    def write_bytes(self, relpath: str, data: bytes) -> None:
        """Write a file atomically: readers see the old file, or the whole new one, never a part."""
        if not self.is_local:  # an S3 object becomes visible only when its upload completes
            with self.fs.open_output_stream(self.path(relpath)) as out:
                out.write(data)
            return
        with self.open_atomic(relpath) as out:
            out.write(data)

    @contextlib.contextmanager
    def open_atomic(self, relpath: str) -> Iterator[io.BufferedWriter]:
        """A binary file to stream a large output into; it appears at ``relpath`` only on success.

        Local stores write a hidden temporary sibling and rename it; S3 stores spool to a local
        temporary file and upload it once complete.
        """
        path = self.path(relpath)
        self._ensure_parent(path)
        directory = posixpath.dirname(path) if self.is_local else None
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as out:
                yield out
                out.flush()
                os.fsync(out.fileno())
            if self.is_local:
                os.replace(tmp, path)
            else:
                with open(tmp, "rb") as src, self.fs.open_output_stream(path) as dst:
                    shutil.copyfileobj(src, dst, length=8 << 20)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def read_bytes(self, relpath: str) -> bytes:
        with self.fs.open_input_stream(self.path(relpath)) as src:
            return src.read()

    def write_json(self, relpath: str, payload: Any) -> None:
        self.write_bytes(relpath, json.dumps(payload, indent=2, ensure_ascii=False, default=str).encode())

    def read_json(self, relpath: str) -> Any:
        return json.loads(self.read_bytes(relpath))

    def read_json_if_present(self, relpath: str) -> Any:
        """The JSON file's content, or None when there is no such file."""
        return self.read_json(relpath) if self.exists(relpath) else None

    def write_text(self, relpath: str, text: str) -> None:
        self.write_bytes(relpath, text.encode("utf-8"))

    def write_table(self, relpath: str, table: pa.Table) -> None:
        """Write one Parquet file atomically (zstd)."""
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd")
        self.write_bytes(relpath, buf.getvalue())

    def read_table(self, relpath: str, schema: pa.Schema | None = None) -> pa.Table:
        """Read a Parquet file or a folder of Parquet part files (empty table if the folder is empty)."""
        path = self.path(relpath)
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            return pq.read_table(path, filesystem=self.fs, schema=schema)
        parts = [posixpath.join(path, name) for name in self.listdir(relpath, suffix=".parquet")]
        if not parts:
            if schema is None:
                raise FileNotFoundError(f"no Parquet data at {self.uri_of(relpath)}")
            return schema.empty_table()
        tables = [pq.read_table(p, filesystem=self.fs, schema=schema) for p in parts]
        return pa.concat_tables(tables, promote_options="default" if schema is None else "none")

    def read_part(self, relpath: str, columns: list[str] | None = None) -> pa.Table:
        """One Parquet file, only ``columns`` when given (no folder lookup: the caller listed it)."""
        return pq.read_table(self.path(relpath), columns=columns, filesystem=self.fs)

    def drop_rows(self, relpath: str, drop: pa.Array) -> None:
        """Rewrite one Parquet part without the rows where ``drop`` is true (atomically), or delete the part
        when no row is left: a row is then either still in its part or gone, never in two places."""
        kept = self.read_part(relpath).filter(pc.invert(drop))
        if kept.num_rows:
            self.write_table(relpath, kept)
        else:
            self.delete(relpath)

    def iter_batches(self, relpath: str, batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
        """Stream the record batches of every Parquet part under a folder (bounded memory)."""
        for name in self.listdir(relpath, suffix=".parquet"):
            pf = pq.ParquetFile(self.fs.open_input_file(self.path(relpath, name)))
            yield from pf.iter_batches(batch_size=batch_size)

    # -- task markers (resume) ---------------------------------------------------------------------
    def mark_done(self, stage: str, task: str, info: dict[str, Any] | None = None) -> None:
        """Record that one unit of a stage committed its output; written after the output itself."""
        self.write_json(LAYOUT.marker(stage, task), info or {})

    def is_done(self, stage: str, task: str) -> bool:
        return self.exists(LAYOUT.marker(stage, task))

    def done_info(self, stage: str, task: str) -> dict[str, Any]:
        """What :meth:`mark_done` recorded for a unit of work."""
        return self.read_json(LAYOUT.marker(stage, task))

    def forget_done(self, stage: str, task: str) -> None:
        """Delete a unit's done marker, so that the stage does the unit again."""
        self.delete(LAYOUT.marker(stage, task))

    def done_tasks(self, stage: str) -> set[str]:
        return {name[: -len(".json")] for name in self.listdir(LAYOUT.markers(stage), suffix=".json")}

    def delete(self, relpath: str) -> None:
        path = self.path(relpath)
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(path)
        elif info.type == pafs.FileType.File:
            self.fs.delete_file(path)
