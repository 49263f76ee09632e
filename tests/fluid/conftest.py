"""A local Ray cluster for the tests that need one (the Ray backend, the Tune adapter): two
virtual devices as the custom resource `vgpu`, started per module and shut down after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray = pytest.importorskip("ray", reason="the tune extra installs ray")
    ray.init(
        num_cpus=8,
        resources={"vgpu": 2},
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    yield
    ray.shutdown()
