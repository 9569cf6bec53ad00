"""Connecting to Ray the same way from every job (CLI on a laptop or ``ray job submit`` on a cluster)."""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from collections.abc import Iterator
from typing import TypeVar
from urllib.parse import urlsplit

from pydantic import Field

from crawler.base import ConfigModel, InputError

T = TypeVar("T")


class RayConfig(ConfigModel):
    """How a job reaches Ray."""

    address: str | None = Field(
        default=None,
        description="Cluster address; None uses $RAY_ADDRESS (set by `ray job submit`), else a local Ray. "
        "A remote cluster is best given as $RAY_ADDRESS, which is read before Ray is imported.",
    )
    num_cpus: int | None = Field(
        default=None,
        ge=1,
        description="Logical CPUs of a local Ray started by the job (ignored when joining a cluster).",
    )
    progress_bars: bool | None = Field(
        default=None,
        description="Show Ray Data progress bars; None: when stderr is a terminal (not in job logs).",
    )
    log_level: str = Field(
        default="WARNING",
        description="Level of Ray's own log lines in this process (INFO shows Ray's start-up chatter).",
    )


def is_loopback(address: str) -> bool:
    """Whether a Ray address (``host:port``, ``ray://host:port``, ``http://host:port``) is this machine."""
    host = urlsplit(address if "://" in address else f"ray://{address}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def use_loopback_when_local() -> None:
    """Keep Ray on 127.0.0.1 when this process starts a local Ray or joins one on loopback.

    Ray decides at import time whether a node is reachable from other hosts
    (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``); without it, a driver given ``127.0.0.1:port`` rewrites
    that to the host's outward address. The CLI calls this at start and :func:`ensure_ray` before it
    imports Ray (importing ``jobs`` changes nothing); a remote ``RAY_ADDRESS`` leaves Ray's default
    (multi-node) behaviour alone.
    """
    address = os.environ.get("RAY_ADDRESS")
    if not address or is_loopback(address):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def ensure_ray(config: RayConfig | None = None) -> None:
    """Initialise Ray once per process: join the cluster when there is one, else start a local one.

    A local Ray, or a driver joining a cluster on loopback (``cluster/local.sh``, the tests), stays on
    127.0.0.1; a remote cluster is joined as it is. Ray Data keeps input order so outputs are
    deterministic.
    """
    use_loopback_when_local()
    import ray
    from ray.data import DataContext

    config = config or RayConfig()
    if not ray.is_initialized():
        # One authentication mode for every process of a cluster (a plain local ray.init() would turn
        # token auth on and break a later `ray job submit`); a cluster that uses tokens sets it.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        address = config.address or os.environ.get("RAY_ADDRESS")
        level = logging.getLevelName(config.log_level.upper())
        for name in ("ray", "ray.data"):
            logging.getLogger(name).setLevel(level)
        if address:
            ray.init(address=address, log_to_driver=True, logging_level=level)
        else:
            ray.init(
                num_cpus=config.num_cpus, include_dashboard=False, log_to_driver=True, logging_level=level
            )
    context = DataContext.get_current()
    context.execution_options.preserve_order = True
    bars = sys.stderr.isatty() if config.progress_bars is None else config.progress_bars
    context.enable_progress_bars = bars
    context.enable_operator_progress_bars = bars
    if not bars:  # off on purpose (a job log): our own progress lines replace Ray Data's hint about them
        from ray.util.debug import log_once

        log_once("ray_data_progress_manager_disabled")


def original_input_error(exc: BaseException) -> InputError | None:
    """The InputError a Ray task raised, found through Ray's wrappers (``cause``, ``__cause__``)."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if type(current) is InputError:  # exactly: Ray's wrapper classes derive from the cause's class
            return current
        pending += [getattr(current, "cause", None), current.__cause__, current.__context__]
    return None


def input_errors_unwrapped(items: Iterator[T]) -> Iterator[T]:
    """Iterate a Ray computation; an InputError raised in a task comes out as that one-line error."""
    try:
        yield from items
    except Exception as exc:
        found = original_input_error(exc)
        if found is None:
            raise
        raise InputError(found.source, found.reason, line=found.line, field=found.field) from None
