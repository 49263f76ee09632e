"""The local worker pool (2 virtual devices of 2 slots), started once for the runtime tests:
starting its four processes costs more than the tuning runs on it, and a pool is meant to be
reused across runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kairos.fluid.runtime.local import DIGITS, WorkerPool


@pytest.fixture(scope="package")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(2, 2, DIGITS) as p:
        yield p
