"""The lanes' threads without a scheduler: iterations in a lane are serialized, a switch between
resident jobs moves no bytes, and the suspend/resume baseline moves all of them."""

from __future__ import annotations

import itertools
import threading

import pytest
from tests.salus.runtime.stack import runtime_device

from kairos.salus.runtime import zoo
from kairos.salus.runtime.lanes import IterationRun, LaneThreads, SwitchMode
from kairos.salus.runtime.session import Session


def _sessions(n: int, **options: int) -> dict[int, Session]:
    out = {}
    for i in range(n):
        s = Session(i, runtime_device())
        s.setup(zoo.lstm, "train", {"seed": i, **options}, 1, 2, (0.1, 0.05))
        out[i] = s
    return out


def _alternate(mode: SwitchMode, sessions: dict[int, Session], rounds: int) -> list[IterationRun]:
    runs: list[IterationRun] = []
    done = threading.Event()

    def deliver(r: IterationRun) -> None:
        runs.append(r)
        done.set()

    lanes = LaneThreads(sessions, deliver, switch=mode)
    try:
        for k in range(rounds):
            done.clear()
            job = k % len(sessions)
            lanes.launch(job, 0, sessions[job].budget_e).result()
            assert done.wait(5)
    finally:
        lanes.stop()
    return runs


def test_resident_switches_leave_every_storage_where_it_was() -> None:
    sessions = _sessions(2)
    before = {j: s.state_pointers() for j, s in sessions.items()}
    runs = _alternate("resident", sessions, 6)
    assert [r.error for r in runs] == [None] * 6
    assert [r.switched_from for r in runs] == [None, 0, 1, 0, 1, 0]
    assert all(r.switch_gap is not None and r.switch_gap >= 0 for r in runs[1:])
    assert {j: s.state_pointers() for j, s in sessions.items()} == before


def test_suspend_baseline_moves_the_state_and_costs_more_than_a_resident_switch() -> None:
    sessions = _sessions(2, hidden=256, vocab=2000)  # ~10 MB of state per job
    resident = _alternate("resident", sessions, 8)
    before = {j: s.state_pointers() for j, s in sessions.items()}
    suspended = _alternate("suspend", sessions, 8)
    assert all(r.error is None for r in suspended)
    assert all(r.swap_s > 0 for r in suspended[1:]) and all(r.swap_s == 0 for r in resident)
    moved = {j: s.state_pointers() for j, s in sessions.items()}
    assert moved != before  # storages were freed and re-allocated
    gaps = sorted(r.switch_gap for r in resident[1:] if r.switch_gap is not None)
    swaps = sorted(r.switch_gap for r in suspended[2:] if r.switch_gap is not None)
    # medians, wide margin: copying ~20 MB out and in dwarfs a thread hand-off
    assert swaps[len(swaps) // 2] > 2 * gaps[len(gaps) // 2]


def test_a_lane_runs_one_iteration_at_a_time() -> None:
    sessions = _sessions(3)
    active, overlap = [0], [False]
    lock = threading.Lock()
    for s in sessions.values():
        assert s.parts is not None
        step = s.parts.step

        def guarded(batch: object, step=step) -> None:  # type: ignore[no-untyped-def]
            with lock:
                active[0] += 1
                overlap[0] |= active[0] > 1
            step(batch)
            with lock:
                active[0] -= 1

        s.parts.step = guarded
    runs: list[IterationRun] = []
    lanes = LaneThreads(sessions, runs.append)
    futures = [lanes.launch(j % 3, 0, sessions[j % 3].budget_e) for j in range(9)]
    for f in futures:
        f.result(timeout=10)
    lanes.stop()
    assert len(runs) == 9 and not overlap[0]
    assert all(a.end <= b.start for a, b in itertools.pairwise(runs))


def test_stopped_lanes_refuse_work() -> None:
    lanes = LaneThreads({}, lambda r: None)
    lanes.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        lanes.launch(0, 0, 0)
