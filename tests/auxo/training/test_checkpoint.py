"""Coordinator checkpoint/restart (spec 3.11): a killed coordinator restarted from its
checkpoint loses only the rounds after it and finishes with the same cohorts, bit for bit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kairos.auxo import AuxoParams
from kairos.auxo.checkpoint import Checkpointer, checkpointed, encode, latest, load, save
from kairos.auxo.distributed import DistributedPolicy, distributed
from kairos.auxo.training import CohortTraining, LeafRound
from kairos.fl.learning import RoundRunner
from tests.auxo.training.test_training import _params, _runner

ROUNDS = 14
REPO = Path(__file__).resolve().parents[3]
SCHEDULE = (5, 9)  # two splits: "0" at 5, then its children at 9


class Killed(Exception):
    """The coordinator process dies (here: its in-memory state is thrown away)."""


def _kill_during_round(runner: RoundRunner, at_call: int) -> None:
    """The `at_call`-th round runs (the leaf's state is updated in place) and then the
    coordinator dies before it records the round: that round is the one in flight."""
    real = runner.run_round
    calls = [0]

    def dying(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        calls[0] += 1
        if calls[0] == at_call:
            raise Killed
        return out

    runner.run_round = dying  # type: ignore[method-assign]


def _trace(entries: list[LeafRound]) -> list[tuple[Any, ...]]:
    return [(e.cohort, e.round, e.start, e.end, e.participants, e.split) for e in entries]


def _reference(params: AuxoParams) -> CohortTraining:
    run = CohortTraining(_runner(), params, seed=5)
    run.run(ROUNDS, eval_every=100)
    return run


def _killed_and_restarted(
    params: AuxoParams, ckpt: Path, kill_at: int
) -> tuple[CohortTraining, list[LeafRound], Checkpointer, int]:
    """Returns the finished restarted run, the log of the killed one, its checkpointer and
    the number of steps the checkpoint the restart loaded holds."""
    runner = _runner()
    _kill_during_round(runner, kill_at)
    first = checkpointed(runner, params, ckpt, seed=5)
    with pytest.raises(Killed):
        first.run(ROUNDS, eval_every=100)
    hook = first.on_step
    assert isinstance(hook, Checkpointer)
    before = list(first.log)
    del first  # the coordinator is gone; only the checkpoint folder survives
    folder = latest(ckpt)
    assert folder is not None
    resumed = int(json.loads((folder / "state.json").read_text())["steps"])
    second = checkpointed(_runner(), params, ckpt, seed=5)
    assert len(second.log) == resumed
    second.run(ROUNDS, eval_every=100)
    return second, before, hook, resumed


def _assert_same_run(a: CohortTraining, b: CohortTraining) -> None:
    assert len(a.leaves()) == 4
    _assert_same_run_so_far(a, b)


def _assert_same_run_so_far(a: CohortTraining, b: CohortTraining) -> None:
    assert _trace(a.log) == _trace(b.log)
    assert a.leaves() == b.leaves()
    assert np.array_equal(a.memberships(), b.memberships())
    for c in a.leaves():
        assert np.array_equal(a.states[c].weights, b.states[c].weights)  # exact, not allclose
        assert (a.states[c].now, a.states[c].round) == (b.states[c].now, b.states[c].round)
    assert encode(a)[0] == encode(b)[0]


@pytest.mark.parametrize("kill_at", [7, 16])
def test_checkpoint_every_round_loses_only_the_round_in_flight(
    tmp_path: Path, kill_at: int
) -> None:
    params = _params(partition_schedule=SCHEDULE, ckpt_every=1)
    ref = _reference(params)
    restarted, before, hook, resumed = _killed_and_restarted(params, tmp_path, kill_at)
    assert len(before) == kill_at - 1 == hook.saved[-1]  # the killed round never got logged
    lost = kill_at - resumed
    assert lost == 1
    assert _trace(restarted.log[: len(before)]) == _trace(before)
    _assert_same_run(ref, restarted)


def test_sparse_checkpoints_lose_the_rounds_since_the_last_one_or_the_last_split(
    tmp_path: Path,
) -> None:
    params = _params(partition_schedule=SCHEDULE, ckpt_every=4)
    ref = _reference(params)
    split_steps = [i + 1 for i, e in enumerate(ref.log) if e.split is not None]
    kill_at = 15
    restarted, before, hook, resumed = _killed_and_restarted(params, tmp_path, kill_at)
    done = kill_at - 1
    expected = [s for s in range(1, done + 1) if s % 4 == 0 or s in split_steps]
    assert hook.saved == expected
    lost = kill_at - resumed
    assert resumed == expected[-1]
    assert _trace(restarted.log[: len(before)]) == _trace(before)
    assert lost == kill_at - max(max(s for s in split_steps if s <= done), 4 * (done // 4))
    assert lost > 1  # the rounds after the last checkpoint are redone
    _assert_same_run(ref, restarted)


def test_a_checkpoint_round_trips_the_whole_coordinator_state(tmp_path: Path) -> None:
    params = _params(partition_schedule=SCHEDULE)
    run = CohortTraining(_runner(alg="yogi"), params, seed=2)
    for _ in range(12):
        run.step()
    save(run, tmp_path)
    back = load(tmp_path, _runner(alg="yogi"), params)
    assert encode(back)[0] == encode(run)[0]
    arrays, orig = encode(back)[1], encode(run)[1]
    assert arrays.keys() == orig.keys() and len(arrays) > 0
    assert all(np.array_equal(arrays[k], orig[k]) for k in arrays)
    # generators resume the same stream
    for c in run.leaves():
        assert run.rngs[c].integers(1 << 62) == back.rngs[c].integers(1 << 62)
    assert run.policy.client_rng(3).random() == back.policy.client_rng(3).random()
    assert not (tmp_path / "state.json").exists()  # nothing written outside the step folders
    assert all("pickle" not in p.name for p in tmp_path.rglob("*"))


def test_a_distributed_run_restarts_distributed_with_its_client_records(tmp_path: Path) -> None:
    params = _params(partition_schedule=(4,))
    ref = distributed(CohortTraining(_runner(), params, seed=3))
    run = distributed(CohortTraining(_runner(), params, seed=3))
    for _ in range(9):
        ref.step()
        run.step()
    save(run, tmp_path)
    del run
    back = load(tmp_path, _runner(), params)
    assert isinstance(back.policy, DistributedPolicy) and back.policy.records == {}
    for _ in range(9):
        ref.step()
        back.step()
    _assert_same_run_so_far(ref, back)


def test_restart_with_other_params_is_refused(tmp_path: Path) -> None:
    run = CohortTraining(_runner(), _params(), seed=1)
    run.step()
    save(run, tmp_path)
    with pytest.raises(ValueError, match="other AuxoParams"):
        load(tmp_path, _runner(), _params(p_total=10))
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "empty", _runner(), _params())


def _worker(directory: str, rounds: int) -> None:
    """The coordinator as its own process (run by the SIGKILL test): checkpoints every step."""
    params = _params(partition_schedule=SCHEDULE, ckpt_every=1)
    checkpointed(_runner(), params, directory, seed=5).run(rounds, eval_every=100)


def test_a_coordinator_killed_with_sigkill_resumes_from_its_last_checkpoint(
    tmp_path: Path,
) -> None:
    """A real process, killed by SIGKILL at an arbitrary point (mid-round or mid-write)."""
    rounds, kill_after = 40, 20
    params = _params(partition_schedule=SCHEDULE, ckpt_every=1)
    ref = CohortTraining(_runner(), params, seed=5)
    ref.run(rounds, eval_every=100)
    module = "tests.auxo.training.test_checkpoint"
    cmd = [sys.executable, "-m", module, str(tmp_path), str(rounds)]
    proc = subprocess.Popen(cmd, cwd=REPO)
    try:
        while (folder := latest(tmp_path)) is None or int(folder.name[5:]) < kill_after:
            assert proc.poll() is None, "the worker ended before it was killed"
            time.sleep(0.002)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -9  # killed, it did not finish
    folder = latest(tmp_path)
    assert folder is not None
    resumed = int(json.loads((folder / "state.json").read_text())["steps"])
    steps_on_disk = [int(p.name[5:]) for p in tmp_path.glob("step-*")]
    assert kill_after <= resumed < len(ref.log) and max(steps_on_disk) <= resumed + 1
    restarted = checkpointed(_runner(), params, tmp_path, seed=5)
    assert len(restarted.log) == resumed
    restarted.run(rounds, eval_every=100)
    _assert_same_run(ref, restarted)


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]))
