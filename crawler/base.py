"""The shared foundation of every layer: the input error, the run store and the config convention.

``crawler``, ``judge`` and ``jobs`` import these from here, so there is one place that says how bad
input is reported, where runs live and how a config is written and read::

    from crawler.base import ConfigModel, ConfigPath, InputError, RunStore, load_model

The config convention:

- every config class derives from :class:`ConfigModel`: unknown keys are errors, so a typo never
  passes silently, and :meth:`ConfigModel.fingerprint_payload` leaves out the fields a class lists in
  ``execution_fields`` (how the work is cut and placed, not what it computes);
- :func:`read_yaml` turns an unreadable, non-UTF-8, malformed or non-mapping file into an
  :class:`InputError` naming the file (and line);
- ``--set a.b=c`` (:func:`apply_override`) is the one override path of every command; the value is
  parsed as YAML;
- a :data:`ConfigPath` field written in a config file is relative to that file; one given on the
  command line is relative to the working directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationInfo

from crawler.errors import InputError, validate_model

if TYPE_CHECKING:
    from crawler.storage import RunStore, resolve_uri

__all__ = [
    "ConfigModel",
    "ConfigFile",
    "ConfigPath",
    "InputError",
    "RunStore",
    "apply_override",
    "from_command_line",
    "load_model",
    "read_data",
    "read_text",
    "read_yaml",
    "resolve_uri",
    "validate_model",
]

ModelT = TypeVar("ModelT", bound=BaseModel)


def __getattr__(name: str) -> Any:
    """``RunStore`` and ``resolve_uri`` are imported on first use (pyarrow is slow to import)."""
    if name in {"RunStore", "resolve_uri"}:
        from crawler import storage

        return getattr(storage, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ConfigModel(BaseModel):
    """Base of every config class: unknown keys are rejected, naming their dotted path."""

    model_config = ConfigDict(extra="forbid")

    #: Fields that change how the work is cut and placed, not its result: left out of the fingerprint,
    #: so that a rerun with other values resumes the committed work instead of redoing it.
    execution_fields: ClassVar[frozenset[str]] = frozenset()

    def fingerprint_payload(self) -> dict[str, Any]:
        """The fields that decide this config's results (JSON-ready), for a stage fingerprint; a nested
        config leaves its own execution fields out too."""
        payload = self.model_dump(mode="json", exclude=set(self.execution_fields))
        for name, value in self:
            if name in payload and isinstance(value, ConfigModel):
                payload[name] = value.fingerprint_payload()
        return payload


class CommandLineValue(str):
    """A string given on the command line (``--set``): a relative path in it stays relative to the cwd."""


def _relative_to_config(value: Any, info: ValidationInfo) -> Any:
    base = (info.context or {}).get("config_dir")
    if base is None or isinstance(value, CommandLineValue) or not isinstance(value, str) or not value:
        return value
    if "://" in value or Path(value).expanduser().is_absolute():
        return value
    return os.path.normpath(os.path.join(base, value))


#: A local path or URI; relative paths in a config file are relative to that file.
ConfigPath = Annotated[str, BeforeValidator(_relative_to_config)]
#: A local file; a relative path in a config file is relative to that file.
ConfigFile = Annotated[Path, BeforeValidator(_relative_to_config)]


def from_command_line(value: Any) -> Any:
    """Mark the strings of a value given on the command line (relative paths in it stay cwd-relative)."""
    if isinstance(value, str):
        return CommandLineValue(value)
    if isinstance(value, list):
        return [from_command_line(item) for item in value]
    if isinstance(value, dict):
        return {key: from_command_line(item) for key, item in value.items()}
    return value


def read_text(path: str | Path, what: str = "file") -> str:
    """A local UTF-8 text file (a BOM is dropped).

    Raises:
        InputError: the file is missing, a directory, unreadable, not UTF-8 or binary.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(source, f"{what} not found") from None
    except IsADirectoryError:
        raise InputError(source, f"is a directory, not a {what}") from None
    except OSError as exc:
        raise InputError(source, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(source, f"not UTF-8 text (byte 0x{data[exc.start]:02x})", line=line) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputError(source, "binary data (a NUL byte), not text", line=line)
    return text


def read_data(path: str | Path, what: str = "file") -> Any:
    """A JSON (``.json``) or YAML file's data (None for an empty YAML file).

    Raises:
        InputError: naming the file and line of what cannot be read or parsed.
    """
    source = str(path)
    text = read_text(path, what)
    if source.lower().endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                source, f"malformed JSON: {exc.msg} (column {exc.colno})", line=exc.lineno
            ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise InputError(source, f"malformed YAML: {problem}", line=mark.line + 1 if mark else None) from None


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML (or JSON) config file as a dict (an empty file is an empty config).

    Raises:
        InputError: the file is missing, unreadable, not UTF-8 text, not valid YAML or not a mapping.
    """
    tree = read_data(path, "config file")
    if tree is None:
        return {}
    if not isinstance(tree, dict):
        raise InputError(str(path), f"expected a mapping of settings, got a {type(tree).__name__}")
    return tree


def apply_override(tree: dict[str, Any], assignment: str, source: str = "--set") -> None:
    """Apply one ``dotted.key=value`` override to a nested dict (the value is parsed as YAML)."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise InputError(source, f"override {assignment!r} is not of the form section.key=value")
    parts = [part.strip() for part in key.strip().split(".")]
    if not all(parts):
        raise InputError(source, f"override {assignment!r} has an empty key", field=key.strip())
    node = tree
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            where = ".".join(parts[: depth + 1])
            raise InputError(source, f"{where} is not a section", field=key.strip())
        node = child
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise InputError(source, f"value is not valid YAML: {problem}", field=key.strip()) from None
    node[parts[-1]] = from_command_line(value)


def load_model(
    model: type[ModelT],
    path: str | Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    *,
    section: str | None = None,
) -> ModelT:
    """Build a config: an optional YAML file, then ``--set`` overrides, validated by ``model``.

    Args:
        model: The config class.
        path: The YAML file (None: defaults and overrides only).
        overrides: ``dotted.key=value`` assignments, applied in order.
        section: When the file has this top-level key holding a mapping (an audit config holds a
            ``judge:`` section, say), only that section is read.

    Raises:
        InputError: naming the file (or ``--set``) and the dotted field of the first invalid value.
    """
    tree = read_yaml(path) if path else {}
    if section and isinstance(tree.get(section), dict) and section not in model.model_fields:
        tree = tree[section]
    for assignment in overrides:
        apply_override(tree, assignment)
    source = str(path) if path else "--set"
    config_dir = os.path.dirname(str(path)) if path else None
    try:
        return validate_model(model, tree, source, context={"config_dir": config_dir})
    except InputError as exc:
        overridden = [a.partition("=")[0].strip() for a in overrides]
        if path and exc.field and any(exc.field == k or exc.field.startswith(k + ".") for k in overridden):
            raise InputError("--set", exc.reason, field=exc.field) from None
        raise
