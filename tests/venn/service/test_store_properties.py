"""Property tests of the Venn store: it gives back what it was given, across a reopen of the
file, and its round counters follow the assignments and responses written to it."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kairos.venn.service.offers import THRESHOLDS
from kairos.venn.service.store import SCHEMA_VERSION, JobRow, RoundRow, Store

texts = st.text(max_size=30)
reals = st.floats(allow_nan=False, allow_infinity=False)  # the store refuses both
int64 = st.integers(-(2**63), 2**63 - 1)

job_rows = st.builds(
    JobRow,
    job_id=st.text(min_size=1, max_size=30),
    name=texts,
    requirement=st.fixed_dictionaries({k: reals for k in THRESHOLDS}),
    demand=int64,
    rounds=int64,
    deadline_s=reals,
    min_resp_frac=reals,
    created=reals,
    rounds_done=st.just(0),  # a new job: nothing done, not finished
    finished=st.none(),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(job_rows, max_size=8, unique_by=lambda j: j.job_id))
def test_jobs_come_back_as_written_in_order_across_a_reopen(rows: list[JobRow]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "venn.sqlite"
        s = Store(path)
        for row in rows:
            s.add_job(row)
        assert s.jobs() == rows and s.jobs(active_only=True) == rows
        for row in rows:
            assert s.job(row.job_id) == row
        s.close()
        again = Store(path)
        assert again.version == SCHEMA_VERSION
        assert again.jobs() == rows
        if "absent" not in {r.job_id for r in rows}:
            assert again.job("absent") is None
        again.close()


@dataclass
class ModelRound:
    row: RoundRow
    devices: dict[str, tuple[float, float, float | None]] = field(default_factory=dict)


class StoreMachine(RuleBasedStateMachine):
    """Jobs with one round open at a time; devices assigned, responding, rounds closed, jobs
    finished, rounds aborted and reopened; the file closed and reopened at any point."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.path = Path(self.tmp.name) / "venn.sqlite"
        self.store = Store(self.path)
        self.jobs: dict[str, JobRow] = {}
        self.rounds: dict[tuple[str, int], ModelRound] = {}
        self.now = 0.0

    def teardown(self) -> None:
        self.store.close()
        self.tmp.cleanup()

    def _open(self, job_id: str) -> ModelRound | None:
        for (j, _), r in self.rounds.items():
            if j == job_id and r.row.closed is None:
                return r
        return None

    @rule(rounds=st.integers(1, 3), demand=st.integers(1, 4))
    def add_job(self, rounds: int, demand: int) -> None:
        job = JobRow(
            f"job-{len(self.jobs)}", "n", dict.fromkeys(THRESHOLDS, 0.0), demand, rounds,
            10.0, 0.5, self.now, 0, None,
        )  # fmt: skip
        self.store.add_job(job)
        self.jobs[job.job_id] = job

    @rule(data=st.data())
    def open_round(self, data: st.DataObject) -> None:
        idle = [
            j for j in self.jobs.values() if j.finished is None and self._open(j.job_id) is None
        ]
        if not idle:
            return
        job = data.draw(st.sampled_from(idle))
        needed = data.draw(st.integers(1, job.demand))
        row = RoundRow(job.job_id, job.rounds_done, job.demand, needed, self.now, 0, 0, None)
        self.store.open(row)
        self.rounds[(job.job_id, row.round_idx)] = ModelRound(replace(row))

    @rule(data=st.data(), device=st.sampled_from(["d0", "d1", "d2", "d3", "d4"]), cap=reals)
    def assign(self, data: st.DataObject, device: str, cap: float) -> None:
        free = [r for r in self.rounds.values() if r.row.closed is None and device not in r.devices]
        if not free:
            return
        r = data.draw(st.sampled_from(free))
        self.store.assign(r.row.job_id, r.row.round_idx, device, self.now, cap)
        r.devices[device] = (self.now, cap, None)
        r.row.dispatched += 1

    @rule(data=st.data())
    def respond(self, data: st.DataObject) -> None:
        waiting = [
            (r, d)
            for r in self.rounds.values()
            if r.row.closed is None
            for d, (_, _, responded) in r.devices.items()
            if responded is None
        ]
        if not waiting:
            return
        r, device = data.draw(st.sampled_from(waiting))
        self.store.respond(r.row.job_id, r.row.round_idx, device, self.now)
        assigned, cap, _ = r.devices[device]
        r.devices[device] = (assigned, cap, self.now)
        r.row.responses += 1

    @rule(data=st.data())
    def close(self, data: st.DataObject) -> None:
        open_ = [r for r in self.rounds.values() if r.row.closed is None]
        if not open_:
            return
        r = data.draw(st.sampled_from(open_))
        job = self.jobs[r.row.job_id]
        finish = job.rounds_done + 1 >= job.rounds
        self.store.close_round(job.job_id, r.row.round_idx, self.now, finish)
        r.row.closed = self.now
        job.rounds_done += 1
        job.finished = self.now if finish else None

    @rule(data=st.data(), gap=st.floats(0.0, 1.0))
    def abort(self, data: st.DataObject, gap: float) -> None:
        """An abort: the round's next attempt opens `gap` later with nothing counted."""
        open_ = [r for r in self.rounds.values() if r.row.closed is None]
        if not open_:
            return
        r = data.draw(st.sampled_from(open_))
        self.store.reopen(r.row.job_id, r.row.round_idx, self.now + gap)
        r.row.opened, r.row.dispatched, r.row.responses = self.now + gap, 0, 0

    @rule(dt=st.floats(0.0, 100.0))
    def advance(self, dt: float) -> None:
        self.now += dt

    @precondition(lambda self: bool(self.jobs))
    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = Store(self.path)

    @invariant()
    def store_matches_the_model(self) -> None:
        assert self.store.jobs() == list(self.jobs.values())
        active = [j for j in self.jobs.values() if j.finished is None]
        assert self.store.jobs(active_only=True) == active
        for job_id in self.jobs:
            r = self._open(job_id)
            assert self.store.open_round(job_id) == (None if r is None else r.row)
        for r in self.rounds.values():
            # an attempt counts only what was written since it opened (an abort zeroes both)
            assert 0 <= r.row.dispatched <= len(r.devices)
            assert 0 <= r.row.responses <= len(r.devices)
            for device, (assigned, cap, responded) in r.devices.items():
                got = self.store.assignment(r.row.job_id, r.row.round_idx, device)
                assert got is not None
                assert (got["assigned"], got["capability"], got["responded"]) == (
                    assigned,
                    cap,
                    responded,
                )


StoreMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_store_state_machine = StoreMachine.TestCase
