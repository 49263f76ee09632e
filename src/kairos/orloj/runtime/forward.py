"""Running a batch where the model lives: threads, warm-up, timing, and one job's result.

Shared by both executors (a thread here, a worker process in `process`) and by `calibrate`,
which times solo runs the same way; kept apart from `executor` so that the executor can offer
`calibrate()` without the two modules importing each other.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from pydantic import BaseModel

from kairos.orloj.runtime.served import ServedModel

log = logging.getLogger(__name__)


def configure_threads(threads: int, flush_denormal: bool = False) -> None:
    """Intra-op threads (torch's setting is per process) and, only in a worker process of its
    own, no slow denormals (flush-to-zero is process-global CPU state: in a shared process it
    would change every other library's floating point)."""
    torch.set_num_threads(threads)
    if flush_denormal:
        torch.set_flush_denormal(True)


def perf_ms() -> float:
    return time.perf_counter() * 1e3


def timed_run(
    model: ServedModel, xs: Sequence[BaseModel], clock_ms: Callable[[], float]
) -> tuple[list[dict[str, Any]], float, float]:
    """Run one batch; (outputs, start, end) on `clock_ms`, device work included."""
    start = clock_ms()
    outputs = model.run(xs)
    model.synchronize()
    return outputs, start, clock_ms()


# every batch size a default policy may run (Orloj any size up to 16), not only the
# calibrated 1, 2, 4, 8, 16: a size first seen under load pays its allocations then
WARM_SIZES: tuple[int, ...] = tuple(range(1, 17))


def warm_up(model: ServedModel, sizes: Iterable[int]) -> None:
    """Run every input class alone and the costliest class at every batch size once, so lazy
    allocations and kernel selection do not land on the first real requests."""
    classes = list(model.classes().values())
    for x in classes:
        model.run([x])
    for k in sizes:
        model.run([classes[-1]] * k)
    model.synchronize()


# One job, run where the model lives: (start, end, outputs, rejected, error).
JobResult = tuple[float, float, list[dict[str, Any]] | None, bool, str | None]


def execute(
    model: ServedModel, xs: Sequence[BaseModel], latest: float | None, clock_ms: Callable[[], float]
) -> JobResult:
    now = clock_ms()
    if latest is not None and now > latest:
        return now, now, None, True, None
    try:
        outputs, start, end = timed_run(model, xs, clock_ms)
    except Exception as exc:
        log.exception("a batch of %d failed", len(xs))
        return now, clock_ms(), None, False, f"{type(exc).__name__}: {exc}"
    return start, end, outputs, False, None
