"""A higher CPU priority for the frontend of a real-server test, where the OS allows it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def raised_priority(nice: int) -> Iterator[None]:
    """This process at a higher CPU priority if allowed; restored afterwards. The paper ran its
    serving threads so; without the privilege the test runs at the default priority."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)
