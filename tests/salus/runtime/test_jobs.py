"""The job pieces of the real runtime: the zoo, factory loading, the storage tracker, the
profiler, one iteration's checks, and the suspend/resume baseline (CPU, real PyTorch)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.salus.runtime import faulty
from tests.salus.runtime.stack import runtime_device

from kairos.salus.runtime import zoo
from kairos.salus.runtime.job import FactoryError, build, check_options, check_path, load_factory
from kairos.salus.runtime.memory import OverBudget, StorageTracker, state_tensors, storage_bytes
from kairos.salus.runtime.profiler import LeakDuringProfile, Measured, profile
from kairos.salus.runtime.session import JobFailed, Session
from kairos.salus.runtime.suspend import Swapped

FAULTY = "tests.salus.runtime.faulty"


@pytest.mark.parametrize("name", sorted(zoo.FACTORIES))
@pytest.mark.parametrize("kind", ["train", "infer"])
def test_zoo_job_profiles_to_its_state(name: str, kind: str) -> None:
    tracker = StorageTracker()
    with tracker:
        parts = build(zoo.FACTORIES[name], kind, {})  # type: ignore[arg-type]
    m = profile(parts, tracker, warmup=1, measured=2)
    # P is exactly the model state (parameters, Adam moments and step counts for training)
    assert m.persistent == storage_bytes(state_tensors(parts.model, parts.optimizer))
    assert m.ephemeral > 0 and m.t_iter > 0
    assert tracker.live == m.persistent  # the iterations left nothing behind
    if kind == "train":
        assert parts.optimizer is not None and len(parts.optimizer.state) > 0


def test_training_changes_the_parameters_in_place() -> None:
    parts = zoo.cnn("train")
    before = [p.detach().clone() for p in parts.model.parameters()]
    ptrs = [p.data_ptr() for p in parts.model.parameters()]
    for _ in range(3):
        parts.run_iteration()
    assert any(not torch.equal(a, p) for a, p in zip(before, parts.model.parameters(), strict=True))
    assert ptrs == [p.data_ptr() for p in parts.model.parameters()]


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("os:system", "not allowed"),
        ("kairos.salus.runtime.zoo", "import path"),
        ("kairos.salus.runtime.zoo:nope", "no callable 'nope'"),
        ("kairos.salus.runtime.zoo.missing:f", "cannot import"),
        ("kairos.salus.runtime.zoological:cnn", "not allowed"),
        ("../etc:passwd", "import path"),
    ],
)
def test_bad_factory_paths_are_refused_with_the_fix(path: str, fragment: str) -> None:
    with pytest.raises(FactoryError, match=fragment):
        load_factory(path)


def test_allow_list_widening_and_option_binding() -> None:
    assert check_path(f"{FAULTY}:raising", (FAULTY,)) == (FAULTY, "raising")
    f = load_factory("kairos.salus.runtime.zoo:cnn")
    check_options(f, "train", {"batch": 2})
    with pytest.raises(FactoryError, match="bogus"):
        check_options(f, "train", {"bogus": 1})
    with pytest.raises(FactoryError, match="JobParts"):
        build(faulty.not_a_job, "train", {})


def test_tracker_is_per_thread_and_enforces_its_limit() -> None:
    tracker = StorageTracker()
    seen: list[int] = []

    def elsewhere() -> None:
        x = torch.ones(10_000)  # another thread: not charged to the tracker
        seen.append(int(x.sum()))

    with tracker:
        kept = torch.ones(1000)
        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
    assert seen == [10_000] and tracker.live == kept.untyped_storage().nbytes()
    del kept
    assert tracker.live == 0
    tracker.limit = 100
    with pytest.raises(OverBudget, match="past the 100"), tracker:
        torch.zeros(1000)


@given(st.lists(st.integers(1, 5000), min_size=1, max_size=20), st.data())
@settings(max_examples=30, deadline=None)
def test_tracker_counts_live_bytes_exactly(sizes: list[int], data: st.DataObject) -> None:
    tracker = StorageTracker()
    with tracker:
        ts = [torch.empty(n, dtype=torch.uint8) for n in sizes]
        views = [t[: max(1, len(t) // 2)] for t in ts]  # views share their base's storage
    keep = data.draw(st.lists(st.booleans(), min_size=len(ts), max_size=len(ts)))
    ts = [t for t, k in zip(ts, keep, strict=True) if k]
    del views
    assert tracker.live == sum(t.untyped_storage().nbytes() for t in ts)
    assert tracker.peak == sum(sizes)


def test_profiler_refuses_a_job_that_leaks_while_profiled() -> None:
    parts = zoo.vae("train")
    kept: list[torch.Tensor] = []
    step = parts.step

    def leaky_step(batch: Any) -> None:
        step(batch)
        kept.append(torch.ones(100))

    parts.step = leaky_step
    with pytest.raises(LeakDuringProfile, match=r"loss\.item"):
        profile(parts, StorageTracker(), warmup=1, measured=3)


def test_budget_margins() -> None:
    p, e = Measured(1000, 4000, 0.01, 8).budget(0.10, 0.05)
    assert p == 1100 and p + e == 5250


def _session(name: str) -> Session:
    s = Session(0, runtime_device())
    s.setup(getattr(faulty, name), "train", {}, warmup=3, measured=5, margins=(0.1, 0.05))
    return s


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("raising", "raised ValueError: this step is broken"),
        ("leaking", "leaks memory across iterations"),
        ("greedy", "exceeded its memory profile"),
    ],
)
def test_a_misbehaving_job_fails_with_a_clear_error(name: str, fragment: str) -> None:
    s = _session(name)
    s.iterate(0, s.budget_e)  # the first iteration after profiling is fine
    with pytest.raises(JobFailed, match=fragment):
        s.iterate(0, s.budget_e)


def test_suspend_resume_moves_the_bytes_and_restores_them() -> None:
    parts = zoo.lstm("train")
    parts.run_iteration()
    before = [t.detach().clone() for t in state_tensors(parts.model, parts.optimizer)]
    swapped = Swapped(parts)
    assert swapped.bytes == storage_bytes(state_tensors(parts.model, parts.optimizer))
    swapped.suspend()
    assert all(s.nbytes() == 0 for s in swapped.storages)
    swapped.resume()
    after = state_tensors(parts.model, parts.optimizer)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    parts.run_iteration()
