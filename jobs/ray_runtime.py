"""Connecting to Ray the same way from every job (CLI on a laptop or ``ray job submit`` on a cluster)."""

from __future__ import annotations

import os

from pydantic import BaseModel, Field


class RayConfig(BaseModel):
    """How a job reaches Ray."""

    address: str | None = Field(
        default=None,
        description="Cluster address; None uses $RAY_ADDRESS (set by `ray job submit`), else a local Ray.",
    )
    num_cpus: int | None = Field(
        default=None,
        description="Logical CPUs of a local Ray started by the job (ignored when joining a cluster).",
    )
    progress_bars: bool = Field(default=False, description="Show Ray Data progress bars.")


def ensure_ray(config: RayConfig | None = None) -> None:
    """Initialise Ray once per process: join the cluster when there is one, else start a local one.

    Listeners stay on loopback for a local Ray (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` keeps the
    node on 127.0.0.1), and Ray Data keeps input order so outputs are deterministic.
    """
    import ray
    from ray.data import DataContext

    config = config or RayConfig()
    if not ray.is_initialized():
        # Without this a driver advertises the host's first interface address, not loopback.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        # One authentication mode for every process of a cluster (a plain local ray.init() would turn
        # token auth on and break a later `ray job submit`); a cluster that uses tokens sets it.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        address = config.address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=True)
        else:
            ray.init(num_cpus=config.num_cpus, include_dashboard=False, log_to_driver=True)
    context = DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = config.progress_bars
