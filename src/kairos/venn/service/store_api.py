"""What a Venn store is, whatever holds it: the rows, the outcomes of its guarded writes, and
the `VennStore` protocol that the SQLite file (`store.Store`, the embedded default) and
PostgreSQL (`pg_store.PostgresStore`, for several front-ends on one database) both implement.

Two kinds of writes. The single-process service (`core.VennService`) decides everything in its
driver and only persists (`add_job`, `open`, `assign`, `respond`, `close_round`, `reopen`). The
stateless front-ends (`shared.SharedService`) decide nothing that another front-end could
contradict: each change that guards an invariant is one guarded write that the database
applies or refuses (`try_open`, `try_assign`, `try_respond`, `judge_deadlines`), so a device is
never assigned twice in a round, a round never past its demand and a response never counted
twice, however many front-ends race.

`trips` counts the database round trips per operation, so a caller (metrics, the benchmark)
can say what a check-in costs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from kairos.fl.timing import RoundRule


class NonFiniteError(ValueError):
    """A write would store NaN or infinity: refused, naming the field."""


class StoreUnavailable(RuntimeError):
    """The database cannot be reached now (restarting, gone): the request may be retried."""


class KeyReusedError(ValueError):
    """An idempotency key came back with another registration body."""


@dataclass
class JobRow:
    job_id: str
    name: str
    requirement: dict[str, float]
    demand: int
    rounds: int
    deadline_s: float
    min_resp_frac: float
    created: float
    rounds_done: int
    finished: float | None

    @property
    def rule(self) -> RoundRule:
        return RoundRule(deadline_s=self.deadline_s, min_resp_frac=self.min_resp_frac)


@dataclass
class RoundRow:
    job_id: str
    round_idx: int
    demand: int
    needed: int
    opened: float
    dispatched: int
    responses: int
    closed: float | None


@dataclass
class OpenJob:
    """An unfinished job and its open round (None between rounds), as one snapshot read
    returns them to a front-end."""

    job: JobRow
    round: RoundRow | None


class Assign(Enum):
    """What a guarded assignment did."""

    ASSIGNED = "assigned"
    FULL = "full"  # the attempt has all its demand dispatched
    CLOSED = "closed"  # no such open attempt now (closed, aborted and not yet reopened, unknown)
    SERVING = "serving"  # the device already serves (or served) this round


class Respond(Enum):
    """What a guarded response did."""

    COUNTED = "counted"
    COMPLETED = "completed"  # counted, and it closed the round
    FINISHED = "finished"  # counted, closed the round, and that was the job's last
    LATE = "late"  # its attempt closed or aborted: not counted, not recorded
    DUPLICATE = "duplicate"  # this response was recorded before
    UNKNOWN = "unknown"  # no such assignment


class VennStore(Protocol):
    """The store both backends implement (`tests/venn/service/test_store_contract.py` runs one
    contract against each)."""

    trips: Counter[str]

    @property
    def version(self) -> int: ...

    def close(self) -> None: ...

    # reads
    def jobs(self, active_only: bool = False) -> list[JobRow]: ...

    def job(self, job_id: str) -> JobRow | None: ...

    def open_round(self, job_id: str) -> RoundRow | None: ...

    def assignment(self, job_id: str, round_idx: int, device_id: str) -> dict[str, Any] | None: ...

    def snapshot(self) -> list[OpenJob]: ...

    # job registration (idempotent under a key)
    def registration(self, key: str) -> tuple[str, str] | None: ...

    def add_job(self, job: JobRow, key: str | None = None, fingerprint: str = "") -> None: ...

    def register(self, job: JobRow, key: str | None, fingerprint: str) -> tuple[JobRow, bool]: ...

    # the single-process service's writes
    def open(self, rnd: RoundRow) -> None: ...

    def assign(
        self, job_id: str, round_idx: int, device_id: str, now: float, capability: float
    ) -> None: ...

    def respond(self, job_id: str, round_idx: int, device_id: str, now: float) -> None: ...

    def close_round(self, job_id: str, round_idx: int, now: float, finish: bool) -> None: ...

    def reopen(self, job_id: str, round_idx: int, opened: float) -> None: ...

    # the front-ends' guarded writes
    def try_open(self, rnd: RoundRow) -> bool: ...

    def try_assign(
        self, job_id: str, round_idx: int, device_id: str, now: float, capability: float
    ) -> Assign: ...

    def try_respond(self, job_id: str, round_idx: int, device_id: str, now: float) -> Respond: ...

    def judge_deadlines(self, now: float, resubmit_s: float) -> list[tuple[RoundRow, bool]]: ...


def finite(job: JobRow) -> None:
    """Raise NonFiniteError naming the first NaN or infinite number of `job`."""
    numbers = {
        "deadline_s": job.deadline_s,
        "min_resp_frac": job.min_resp_frac,
        "created": job.created,
        **{f"requirement.{k}": v for k, v in job.requirement.items()},
    }
    for name, value in numbers.items():
        if not math.isfinite(value):
            raise NonFiniteError(f"job {job.job_id}: {name} is {value}; only finite numbers")


def verdict(job: JobRow, rnd: RoundRow) -> bool:
    """The deadline verdict on an attempt: the job's `RoundRule`, the driver's rule."""
    return job.rule.succeeds_at_deadline(rnd.demand, rnd.dispatched, rnd.responses)


def empty_attempt(rnd: RoundRow, opened: float) -> RoundRow:
    """A retry of `rnd` opened at `opened` that no device reached."""
    return RoundRow(rnd.job_id, rnd.round_idx, rnd.demand, rnd.needed, opened, 0, 0, None)


def retries(due: float, deadline_s: float, resubmit_s: float, now: float) -> list[float]:
    """When the retries of a round that aborted at `due` open, up to `now`: each `resubmit_s`
    after the previous attempt's deadline (the driver's arithmetic, so both compute the same
    times). A retry whose deadline also passed by `now` was never open to a device (its row
    still held the earlier attempt, which refuses every write), so it aborted empty; the last
    is the attempt to store. A front-end that did not judge for longer than a deadline (a
    pause, a database restart) catches up in one judgement, as the driver's `advance` does."""
    opened = [due + resubmit_s]
    while opened[-1] + deadline_s <= now:
        opened.append(opened[-1] + deadline_s + resubmit_s)
    return opened


def key_reused(key: str) -> KeyReusedError:
    return KeyReusedError(
        f"Idempotency-Key '{key}' was used for a different job registration; "
        "use a new key for a new job."
    )
