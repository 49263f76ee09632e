"""The admission queue (spec 3.6): sessions whose FIND_LANE failed wait here.

It is retried whenever memory may have come free: on every job exit and lane shrink (and, in
the address model, when a lane moved at a boundary). The policy orders it: arrival order for
FIFO, PACK and FAIR, shortest T first for SRTF. Candidates are tried in that order; when one
does not fit, backfilling (PACK, FAIR, SRTF) goes on to the later ones, while FIFO stops: no
job may pass the head. Each admission changes the layout, so later candidates are tried against
the memory that is left.
"""

from __future__ import annotations

from collections.abc import Callable

from kairos.salus.layout import Lane
from kairos.salus.policy import JobState, Policy


class AdmissionQueue:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._jobs: dict[int, JobState] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, job: JobState) -> bool:
        return job.id in self._jobs

    def push(self, job: JobState) -> None:
        self._jobs[job.id] = job

    def remove(self, job: JobState) -> None:
        self._jobs.pop(job.id, None)

    def ordered(self) -> list[JobState]:
        """The waiting jobs in the policy's admission order (head first)."""
        return sorted(self._jobs.values(), key=self.policy.queue_key)

    def head(self) -> JobState | None:
        order = self.ordered()
        return order[0] if order else None

    def admit(self, place: Callable[[JobState], Lane | None]) -> list[tuple[JobState, Lane]]:
        """Try the waiting jobs in order with `place` (which admits a job and returns its lane,
        or returns None when it does not fit); the ones placed leave the queue."""
        admitted: list[tuple[JobState, Lane]] = []
        for job in self.ordered():
            lane = place(job)
            if lane is None:
                if not self.policy.backfill:
                    break
                continue
            del self._jobs[job.id]
            admitted.append((job, lane))
        return admitted
