"""What a client submits (spec 6.2's JobSpec) and what it reads back about a job.

The submission is checked at the boundary: strict types, finite numbers, no unknown fields
(`RequestBody`), a factory written as an import path, options that are plain scalars. Whether
the factory's module is allowed and whether the options fit its signature are checked by the
service before anything runs, with the same field names in the error.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from kairos.runtime.schema import RequestBody
from kairos.salus.runtime.job import Kind

Name = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")
Scalar = int | float | bool | str


class JobSpec(RequestBody):
    """One job: which factory builds it, how many iterations it runs, and what the policies
    read (`expected_s`, SRTF's T; `priority`)."""

    name: str = Name
    factory: str = Field(
        min_length=3,
        max_length=256,
        description="import path 'package.module:function' of a factory returning JobParts",
    )
    kind: Kind = "train"
    iterations: int = Field(ge=1, le=10_000_000, description="iterations to run")
    expected_s: float | None = Field(
        None, gt=0, le=1e9, description="T: expected exclusive run time (SRTF needs it)"
    )
    priority: int = Field(0, ge=-1000, le=1000)
    options: dict[str, Scalar] = Field(
        default_factory=dict, max_length=32, description="keyword arguments for the factory"
    )


class State(enum.StrEnum):
    PROFILING = "profiling"  # being built and profiled (its first iterations)
    QUEUED = "queued"  # waiting for memory (admission queue)
    RUNNING = "running"  # admitted to a lane
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (State.DONE, State.FAILED, State.CANCELLED)


@dataclass
class JobRecord:
    """The service's view of one job, as `GET /v1/jobs/{id}` returns it."""

    id: int
    spec: JobSpec
    submitted: float  # service clock, seconds
    state: State = State.PROFILING
    iterations_done: int = 0
    service_s: float = 0.0  # S: the job's measured iteration time so far
    lane: int | None = None
    error: str | None = None
    started: float = math.nan  # first iteration after admission
    finished: float = math.nan
    persistent_bytes: int = 0  # P and E as budgeted (with margins)
    ephemeral_bytes: int = 0
    t_iter_s: float = math.nan
    switches: list[float] = field(default_factory=list)  # switch gaps into this job (s)
    moved_bytes: int = 0  # most state bytes found moved when switched to (0 under Salus)

    def as_json(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)

        return {
            "id": self.id,
            "name": self.spec.name,
            "factory": self.spec.factory,
            "kind": self.spec.kind,
            "state": self.state.value,
            "iterations": self.spec.iterations,
            "iterations_done": self.iterations_done,
            "service_s": round(self.service_s, 6),
            "lane": self.lane,
            "error": self.error,
            "submitted_s": round(self.submitted, 6),
            "started_s": num(self.started),
            "finished_s": num(self.finished),
            "persistent_bytes": self.persistent_bytes,
            "ephemeral_bytes": self.ephemeral_bytes,
            "t_iter_s": num(self.t_iter_s),
            "expected_s": self.spec.expected_s,
            "priority": self.spec.priority,
            "switches_in": len(self.switches),
            "moved_bytes": self.moved_bytes,
        }
