"""The calibrated worker process the real-server tests share, at a raised CPU priority."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from kairos.orloj.runtime.calibrate import Calibration, CalibrationConfig
from kairos.orloj.runtime.models import ServedModel
from kairos.orloj.runtime.process import ProcessExecutor


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


@contextmanager
def calibrated_worker(
    model: ServedModel, batch_reps: int
) -> Iterator[tuple[ProcessExecutor, Calibration]]:
    """`model` in a worker process of its own (nice -10 where allowed), calibrated there."""
    worker = ProcessExecutor(model, nice=-10)
    with raised_priority(-10):
        worker.start()
        try:
            yield worker, worker.calibrate(CalibrationConfig(solo_runs=10, batch_reps=batch_reps))
        finally:
            worker.stop()
