"""A real Salus service on a free port for the tests: one call gives its URL, a client and the
in-process service (read only to check what HTTP does not show, e.g. storage addresses)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kairos.runtime.http import BackgroundServer
from kairos.salus.runtime.client import SalusClient
from kairos.salus.runtime.device import Device, make_device
from kairos.salus.runtime.server import create_app
from kairos.salus.runtime.service import SalusService
from kairos.salus.runtime.settings import ServiceSettings

FAULTY = "tests.salus.runtime.faulty"
ZOO = "kairos.salus.runtime.zoo"
TINY = {"batch": 4}  # a few-ms step
# `KAIROS_SALUS_TEST_DEVICE=cuda` runs the runtime tests on the GPU (lanes as streams and memory
# pools): what a machine with CUDA checks; CPU otherwise
DEVICE = os.environ.get("KAIROS_SALUS_TEST_DEVICE", "cpu")


def runtime_device(capacity: int = 2**30) -> Device:
    """The device the runtime tests run their sessions on."""
    return make_device(DEVICE, capacity)


@contextmanager
def salus(**settings: Any) -> Iterator[tuple[SalusClient, SalusService]]:
    """`ServiceSettings(**settings)` served over a real socket (1 torch thread by default)."""
    settings.setdefault("torch_threads", 1)
    settings.setdefault("device", DEVICE)
    service = SalusService(ServiceSettings(**settings))
    with BackgroundServer(create_app(service)) as srv, SalusClient(srv.url) as client:
        yield client, service
