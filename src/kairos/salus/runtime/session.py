"""A job inside the service (spec 2.1's session): its program, its memory accounting, and one
iteration at a time with the checks that keep the other jobs safe.

Every iteration runs under the job's `StorageTracker` with a limit of the job's persistent
budget plus its lane's size, so an iteration that allocates past its profile fails at that
operator (`OverBudget`) instead of taking memory promised to others. After the iteration the
bytes still live must not exceed the profiled persistent bytes: more is a leak across
iterations (spec 3.1 step 4, 6.5). A step that raises, leaks or overruns fails this job only:
`JobFailed` carries the message the client sees.

After admission not every iteration is accounted (`AccountingSchedule`, the service's
`account_every`): the accounting is a per-operator cost on CPU, and a job that misbehaves on
every iteration is still failed within `account_every` iterations. An unaccounted iteration runs
the step bare; a storage it creates is never charged, so `tracker.live` may read low until the
next accounted iteration.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from kairos.salus.runtime.device import Device
from kairos.salus.runtime.job import JobParts, Kind, build
from kairos.salus.runtime.memory import OverBudget, StorageTracker, state_tensors
from kairos.salus.runtime.profiler import Measured, profile
from kairos.salus.runtime.sampling import AccountingSchedule


class JobFailed(RuntimeError):
    """The job cannot go on; `str(exc)` says why, for the client."""


class Session:
    """One admitted (or profiling) job's runtime state. Used from one lane thread at a time."""

    def __init__(self, job_id: int, device: Device, account_every: int = 1) -> None:
        self.job_id = job_id
        self.device = device
        self.tracker = StorageTracker()
        self.schedule = AccountingSchedule(account_every, seed=job_id)
        self.accounted = 0  # iterations after set-up that ran under the tracker
        self.parts: JobParts | None = None
        self.measured: Measured | None = None
        self.budget_p = 0  # bytes: persistent budget, with margin
        self.budget_e = 0
        self.pointers: dict[int, int] = {}  # state storages' addresses after set-up

    def setup(
        self,
        factory: Callable[..., Any],
        kind: Kind,
        options: dict[str, Any],
        warmup: int,
        measured: int,
        margins: tuple[float, float],
    ) -> Measured:
        """Build the job in its persistent context, then profile it (warm-up included) in the
        device's profiling context: lazy state the first iterations create exists before
        admission (spec 6.5), and on a GPU their ephemeral blocks are not cached in the job's
        own pool for its whole life."""
        try:
            with self.device.job_context(self.job_id), self.tracker:
                self.parts = build(factory, kind, options)
            with self.device.profile_context():
                self.measured = profile(self.parts, self.tracker, warmup, measured)
        except Exception as exc:
            raise JobFailed(f"setting the job up failed: {type(exc).__name__}: {exc}") from exc
        self.budget_p, self.budget_e = self.measured.budget(*margins)
        self.pointers = self.state_pointers()
        return self.measured

    def moved_bytes(self) -> int:
        """Bytes of model state no longer where they were after set-up: 0 while the job
        stays resident (Salus), all of it once suspend/resume has moved it."""
        now = self.state_pointers()
        return sum(n for ptr, n in self.pointers.items() if now.get(ptr) != n)

    def iterate(self, lane: int, lane_bytes: int) -> float:
        """Run one iteration on `lane` (whose size is `lane_bytes`); its duration in seconds."""
        parts, measured = self.parts, self.measured
        if parts is None or measured is None:
            raise JobFailed("the job was not set up")
        if not self.schedule.next():
            try:
                with self.device.lane_context(lane):
                    return self.device.timed(lane, parts.run_iteration)
            except Exception as exc:
                raise _failed(exc) from exc
        self.accounted += 1
        tracker = self.tracker
        tracker.limit = self.budget_p + lane_bytes
        tracker.reset_peak()
        try:
            with self.device.lane_context(lane), tracker:
                duration = self.device.timed(lane, parts.run_iteration)
        except Exception as exc:
            raise _failed(exc) from exc
        finally:
            tracker.limit = None
        if tracker.live > measured.persistent:
            gc.collect()  # a reference cycle is not a leak: let the collector free it first
        if tracker.live > measured.persistent:
            raise JobFailed(
                f"the job leaks memory across iterations: {tracker.live} bytes are live after "
                f"an iteration, its profile's persistent part is {measured.persistent}; keep no "
                "tensors between steps (store loss.item(), not loss)"
            )
        return duration

    def checkpoint(self) -> bytes:
        """The model's weights as a safetensors file, taken between two iterations (an
        auxiliary call: the lane is idle, so the weights are one consistent step's)."""
        from safetensors.torch import save

        if self.parts is None:
            raise JobFailed("the job was not set up")
        tensors = {
            name: t.detach().to("cpu", copy=True).contiguous()
            for name, t in self.parts.model.state_dict().items()
        }
        return save(tensors, metadata={"job": str(self.job_id)})

    def state_pointers(self) -> dict[int, int]:
        """Storage address -> bytes of the job's model state: unchanged by a switch."""
        if self.parts is None:
            return {}
        out: dict[int, int] = {}
        for t in state_tensors(self.parts.model, self.parts.optimizer):
            s = t.untyped_storage()
            out[s.data_ptr()] = s.nbytes()
        return out

    def close(self) -> None:
        """Drop the job's program: its persistent memory is freed with it."""
        self.parts = None
        self.device.drop_job(self.job_id)


def _failed(exc: Exception) -> JobFailed:
    """The client's message for an exception out of the job's step."""
    over = isinstance(exc, OverBudget) or isinstance(exc.__cause__, OverBudget)
    if over or "past the" in str(exc):  # OverBudget re-raised as another type by the step
        return JobFailed(f"the job exceeded its memory profile: {exc}")
    return JobFailed(f"the job's step raised {type(exc).__name__}: {exc}")
