"""The reduce's settings (the ``reduce:`` section of an audit config, the flags of ``sourcebench reduce``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from crawler.base import ConfigModel


class ReduceConfig(ConfigModel):
    """How sources are reduced to leaderboards."""

    #: How the reduce is executed, not what it computes (both executors write the same files).
    execution_fields: ClassVar[frozenset[str]] = frozenset(
        {"executor", "batch_size", "local_threads", "max_in_flight_mb"}
    )

    policy: Literal["official", "complete"] = Field(
        default="official",
        description="official: every source counts, a missing score is 0 in the weighted total and "
        "skipped in the unweighted mean (compute_metrics.py); complete: sources with any missing "
        "dimension are left out of every aggregate (they stay in source_metrics).",
    )
    executor: Literal["auto", "ray", "local"] = Field(
        default="auto",
        description="ray: Ray Data tasks (a cluster, or the audit's Ray session); local: a thread pool "
        "in this process, no Ray start-up (a laptop's reduce); auto: ray when Ray is initialised or a "
        "cluster is addressed ($RAY_ADDRESS, --ray-address), else local. Both write the same files.",
    )
    batch_size: int = Field(default=65536, gt=0, description="Rows per batch (one Ray task or thread job).")
    local_threads: int | None = Field(
        default=None, gt=0, description="Threads of the local executor (None: one per CPU)."
    )
    max_in_flight_mb: int = Field(
        default=512,
        gt=0,
        description="Object-store memory Ray Data may hold for in-flight batches (streaming bound).",
    )
    bootstrap_replicates: int = Field(default=1000, ge=0, description="Query-bootstrap replicates (0: none).")
    bootstrap_seed: int = Field(default=0, description="Seed of the query bootstrap.")
    confidence_level: float = Field(default=0.95, gt=0, lt=1, description="Coverage of the intervals.")
