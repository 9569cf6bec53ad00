"""Fixtures of the job tests: one local Ray per module that the jobs join."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def local_ray():
    """One in-process local Ray for the module (the audit joins it), shut down at the end."""
    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    if ray.is_initialized():  # an earlier test module left its Ray running: join it
        yield
        return
    ray.init(num_cpus=4, include_dashboard=False)
    yield
    ray.shutdown()
