"""Package ``__init__`` modules that re-export public names without importing them up front (PEP 562).

Importing ``crawler``, ``judge`` or ``jobs.collectors`` then costs nothing until a name is used, so
``sourcebench --help`` does not load pyarrow, Scrapy or an HTTP client::

    __getattr__, __dir__ = lazy_exports(__name__, {"CrawlConfig": "crawler.config", ...})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, homes: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: The package's ``__name__``.
        homes: Public name -> the module that defines it.
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name]), name)
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
