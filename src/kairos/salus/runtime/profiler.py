"""The profiler that measures a job before admission (spec 3.1).

Build the job under its tracker, run `warmup` iterations (lazy state appears in them), then
`measured` iterations recording the bytes live at each boundary (trough) and the peak during
each. P = max trough, E = max peak - P, and the solo iteration time is the median. The warm-up
and measured iterations are real iterations of the job: the service counts them as done.
The margins of spec 3.1 ([RELEASE-HINT] 10% on P, 5% on P + E) turn the measurement into the
budget the lane reserves.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import torch

from kairos.salus.runtime.job import JobParts
from kairos.salus.runtime.memory import StorageTracker


@dataclass(frozen=True)
class Measured:
    """What the profiler saw: bytes and seconds, before margins."""

    persistent: int
    ephemeral: int
    t_iter: float
    iterations: int

    def budget(self, margin_p: float = 0.10, margin_total: float = 0.05) -> tuple[int, int]:
        """(P, E) with the safety margins: P inflated by `margin_p`, then E grown so that
        P + E is at least (1 + margin_total) times the measured peak."""
        p = math.ceil(self.persistent * (1 + margin_p))
        total = math.ceil((self.persistent + self.ephemeral) * (1 + margin_total))
        return p, max(self.ephemeral, total - p)


def _finish_kernels() -> None:
    """On a GPU the step returns once its kernels are queued: wait for them on this thread's
    stream, so that t_iter is the iteration's time and not its launch time."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.current_stream().synchronize()


class LeakDuringProfile(RuntimeError):
    """The job's live bytes kept growing across the measured iterations."""


def profile(
    parts: JobParts, tracker: StorageTracker, warmup: int = 3, measured: int = 5
) -> Measured:
    """Run `warmup + measured` iterations of `parts` under `tracker` (on this thread)."""
    if warmup < 0 or measured < 1:
        raise ValueError("the profiler needs warmup >= 0 and at least one measured iteration")
    with tracker:
        for _ in range(warmup):
            parts.run_iteration()
        troughs: list[int] = []
        peaks: list[int] = []
        times: list[float] = []
        for _ in range(measured):
            troughs.append(tracker.live)
            tracker.reset_peak()
            t0 = time.perf_counter()
            parts.run_iteration()
            _finish_kernels()
            times.append(time.perf_counter() - t0)
            peaks.append(tracker.peak)
        end = tracker.live
    if end > max(troughs):
        raise LeakDuringProfile(
            f"the job's live memory grew from {troughs[0]} to {end} bytes over {measured} "
            "iterations: its step keeps tensors across iterations (store loss.item(), not loss; "
            "drop gradients with optimizer.zero_grad(set_to_none=True))"
        )
    p = max(troughs)
    return Measured(p, max(peaks) - p, statistics.median(times), warmup + measured)
