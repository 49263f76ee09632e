"""The service's one connection to the Salus scheduler: admission, lanes and the per-lane pick.

INTERIM. The pure core (`kairos.salus.driver`, `policy`, `policies/`, the lane manager) is
being written beside this runtime and had not been committed when this file was; until it is,
this adapter carries a minimal rendering of the rules it will take them from: Algorithm 2.1 with
guard (a) and best fit (b), SINGLE lane mode for FIFO/SRTF/FAIR and MULTI for PACK (c), lane
shrink/delete on exit, the admission queue of spec 3.6 (arrival order, SRTF by T, backfill but
for FIFO), and the picks of spec 3.8. The service only calls `arrive`, `done`, `leave`,
`lanes` and `reserved`, so replacing the inside with the core's driver touches no other file.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kairos.salus.runtime.lanes import IterationRun
from kairos.salus.runtime.settings import ServiceSettings
from kairos.salus.runtime.spec import JobRecord

if TYPE_CHECKING:
    from kairos.sim import Timers


class Launcher(Protocol):
    """What the scheduling needs of the service: start an iteration, drop a lane."""

    def launch(self, job_id: int, lane: int, lane_bytes: int) -> None: ...

    def lane_deleted(self, lane: int) -> None: ...


@dataclass
class _Lane:
    id: int
    size: int
    jobs: list[int] = field(default_factory=list)  # admission order
    busy: int | None = None  # the job whose iteration runs
    turn: int = 0  # PACK's round-robin position


class Scheduling:
    def __init__(
        self, settings: ServiceSettings, capacity: int, clock: Timers, service: Launcher
    ) -> None:
        self.policy = settings.policy
        self.capacity = capacity
        self.clock = clock
        self.service = service
        self.multi = settings.policy == "pack"
        self.backfill = settings.policy != "fifo"
        self.queue: list[JobRecord] = []
        self.admitted: dict[int, JobRecord] = {}
        self.lane_of: dict[int, _Lane] = {}
        self._lanes: dict[int, _Lane] = {}
        self.service_s: dict[int, float] = {}  # S as the policies see it
        self._ids = itertools.count()

    # -- memory (Eq. 2.1) -----------------------------------------------------------------------
    def reserved(self) -> int:
        """sum P_i + sum L_l over admitted jobs and lanes: never above C."""
        p = sum(r.persistent_bytes for r in self.admitted.values())
        return p + sum(lane.size for lane in self._lanes.values())

    def lanes(self) -> list[dict[str, Any]]:
        return [
            {"id": lane.id, "size_bytes": lane.size, "jobs": list(lane.jobs), "busy": lane.busy}
            for lane in self._lanes.values()
        ]

    def _find_lane(self, p: int, e: int) -> _Lane | None:
        lanes = sorted(self._lanes.values(), key=lambda lane: (lane.size, lane.id))
        base = self.reserved() + p
        if (self.multi or not lanes) and base + e <= self.capacity:
            lane = _Lane(next(self._ids), e)
            self._lanes[lane.id] = lane
            return lane
        if base > self.capacity:
            return None
        fits = [lane for lane in lanes if lane.size >= e]
        if fits:
            return fits[0]
        for lane in lanes:  # grow the smallest lane that can grow (idle or not: Tier A)
            if base - lane.size + e <= self.capacity:
                lane.size = e
                return lane
        return None

    # -- events ---------------------------------------------------------------------------------
    def arrive(self, record: JobRecord) -> None:
        need = record.persistent_bytes + record.ephemeral_bytes
        if need > self.capacity:
            raise ValueError(
                f"the job needs {need} bytes (P + E with margins) but the device has "
                f"{self.capacity}; it can never be admitted"
            )
        self.queue.append(record)
        self._admit()

    def _admit(self) -> None:
        if self.policy == "srtf":
            self.queue.sort(key=lambda r: (self._remaining(r), r.submitted, r.id))
        for record in list(self.queue):
            lane = self._find_lane(record.persistent_bytes, record.ephemeral_bytes)
            if lane is None:
                if not self.backfill:
                    break
                continue
            self.queue.remove(record)
            self.admitted[record.id] = record
            self.lane_of[record.id] = lane
            others = [self.service_s[j] for j in lane.jobs]
            self.service_s[record.id] = min(others) if others else 0.0  # FAIR's min rule
            lane.jobs.append(record.id)
            self._schedule(lane)

    def _remaining(self, record: JobRecord) -> float:
        t = record.spec.expected_s if record.spec.expected_s is not None else math.inf
        return max(0.0, t - self.service_s.get(record.id, record.service_s))

    def _pick(self, lane: _Lane) -> int | None:
        ready = [j for j in lane.jobs if j in self.admitted]
        if not ready:
            return None
        if self.policy == "fifo":
            return ready[0]
        if self.policy == "srtf":
            return min(ready, key=lambda j: (self._remaining(self.admitted[j]), lane.jobs.index(j)))
        if self.policy == "fair":
            return min(ready, key=lambda j: (self.service_s[j], lane.jobs.index(j)))
        lane.turn = (lane.turn + 1) % len(ready)  # PACK: round robin inside a shared lane
        return ready[lane.turn]

    def _schedule(self, lane: _Lane) -> None:
        if lane.busy is not None:
            return
        job = self._pick(lane)
        if job is not None:
            lane.busy = job
            self.service.launch(job, lane.id, lane.size)

    def done(self, run: IterationRun) -> None:
        lane = self._lanes.get(run.lane)
        if run.job in self.service_s:
            self.service_s[run.job] += run.duration
        if lane is None:
            return
        lane.busy = None
        if not lane.jobs:
            self._delete(lane)
        else:
            self._schedule(lane)

    def leave(self, job_id: int) -> None:
        self.queue = [r for r in self.queue if r.id != job_id]
        if self.admitted.pop(job_id, None) is None:
            return
        self.service_s.pop(job_id, None)
        lane = self.lane_of.pop(job_id)
        lane.jobs.remove(job_id)
        if lane.jobs:
            lane.size = max(self.admitted[j].ephemeral_bytes for j in lane.jobs)  # shrink
        elif lane.busy is None:
            self._delete(lane)
        self._admit()

    def _delete(self, lane: _Lane) -> None:
        del self._lanes[lane.id]
        self.service.lane_deleted(lane.id)
