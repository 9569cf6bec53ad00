"""API keys for the systems under test: where they come from, and keeping them out of every output.

A key is resolved, in this order, from the system definition's ``api_key`` (a literal, or a reference
``env:NAME`` / ``${NAME}`` looked up in the environment, then in the secrets file), from the secrets file
entry under the system's name, and from the environment variable named by ``api_key_env``. Resolved keys
only ever travel in the ``Authorization`` header; :meth:`KeyRing.redact` scrubs them (and any bearer
token) from error messages, raw responses, logs and manifests before anything is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from crawler.base import InputError, read_data

REDACTED = "[REDACTED]"
_REFERENCE = re.compile(r"^(?:env:(?P<a>[A-Za-z_][A-Za-z0-9_]*)|\$\{(?P<b>[A-Za-z_][A-Za-z0-9_]*)\})$")
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}")
#: Keys shorter than this are not scrubbed from text (they would garble ordinary words).
MIN_REDACT_LENGTH = 6


def load_secrets_file(path: str | Path) -> dict[str, str]:
    """Read a secrets file: a JSON or YAML mapping of names (system names or variable names) to keys."""
    data = read_data(path, "secrets file")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a mapping of names to API keys")
    for name, value in data.items():
        if not isinstance(value, str) or not value:
            raise InputError(str(path), "expected a non-empty string key", field=str(name))
    return {str(k): v for k, v in data.items()}


def key_reference(value: str) -> str | None:
    """The variable name of an ``env:NAME`` or ``${NAME}`` reference, or None for a literal key."""
    match = _REFERENCE.match(value.strip())
    return (match.group("a") or match.group("b")) if match else None


class KeyRing:
    """Resolves API keys and remembers every resolved key so that it can be scrubbed from text.

    Args:
        secrets: Name -> key mapping from a secrets file.
        environ: The environment to resolve references in (``os.environ`` by default).
    """

    def __init__(self, secrets: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None):
        self._secrets = dict(secrets or {})
        self._environ = os.environ if environ is None else environ
        self._known: set[str] = {v for v in self._secrets.values() if len(v) >= MIN_REDACT_LENGTH}

    @classmethod
    def from_file(cls, path: str | Path | None) -> KeyRing:
        return cls(load_secrets_file(path) if path else None)

    def _lookup(self, name: str) -> str | None:
        return self._environ.get(name) or self._secrets.get(name)

    def resolve(
        self, system_name: str, api_key: str | None, api_key_env: str | None
    ) -> tuple[str | None, str]:
        """The key for one system and a description of where it came from (safe to log).

        Raises:
            ValueError: A reference or ``api_key_env`` names a variable that is set nowhere.
        """
        key, origin = None, "none"
        if api_key:
            ref = key_reference(api_key)
            if ref is None:
                key, origin = api_key, "literal in system definition"
            else:
                key, origin = self._lookup(ref), f"env:{ref}"
                if not key:
                    raise ValueError(f"system {system_name!r}: api_key refers to {ref}, which is not set")
        elif system_name in self._secrets:
            key, origin = self._secrets[system_name], "secrets file"
        elif api_key_env:
            key, origin = self._lookup(api_key_env), f"env:{api_key_env}"
            if not key:
                raise ValueError(f"system {system_name!r}: api_key_env {api_key_env} is not set")
        if key and len(key) >= MIN_REDACT_LENGTH:
            self._known.add(key)
        return key, origin

    def redact(self, text: str | None) -> str | None:
        """``text`` with every known key and every bearer token replaced by ``[REDACTED]``."""
        if not text:
            return text
        for key in sorted(self._known, key=len, reverse=True):
            text = text.replace(key, REDACTED)
        return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
