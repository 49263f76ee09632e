"""Sampled memory accounting (`account_every`) and the host-memory cache: the cheaper hot path
must still fail a job that leaks or exceeds its profile, within a bounded number of iterations,
and the schedule must not be one a periodic misbehaviour can hide from."""

from __future__ import annotations

import itertools
import resource

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.salus.runtime import faulty
from tests.salus.runtime.stack import runtime_device

from kairos.salus.runtime import zoo
from kairos.salus.runtime.host_cache import cache_host_memory
from kairos.salus.runtime.job import JobParts, Kind
from kairos.salus.runtime.sampling import AccountingSchedule
from kairos.salus.runtime.session import JobFailed, Session


@given(st.integers(1, 40), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_every_gap_between_accounted_iterations_is_at_most_every(every: int, seed: int) -> None:
    schedule = AccountingSchedule(every, seed)
    marks = [i for i in range(20 * every) if schedule.next()]
    gaps = [b - a for a, b in itertools.pairwise([-1, *marks])]
    assert all(1 <= g <= every for g in gaps)
    assert 20 * every - 1 - marks[-1] < every  # nor after the last one
    if every == 1:
        assert len(marks) == 20
    elif every >= 3:  # random gaps: not a stride a periodic misbehaviour could alias with
        assert len(set(gaps)) > 1
        assert len(marks) < 20 * every  # and some iterations do run bare


def _session(factory: object, every: int, job: int = 0) -> Session:
    s = Session(job, runtime_device(), account_every=every)
    s.setup(factory, "train", {}, warmup=3, measured=5, margins=(0.1, 0.05))  # type: ignore[arg-type]
    return s


def _iterations_until_failed(s: Session, limit: int) -> tuple[int, str]:
    for k in range(1, limit + 1):
        try:
            s.iterate(0, s.budget_e)
        except JobFailed as exc:
            return k, str(exc)
    return limit + 1, ""


@pytest.mark.parametrize("every", [1, 4, 16])
@pytest.mark.parametrize(
    ("name", "fragment"),
    [("leaking", "leaks memory across iterations"), ("greedy", "exceeded its memory profile")],
)
def test_a_job_misbehaving_every_iteration_fails_within_every(
    every: int, name: str, fragment: str
) -> None:
    for job in range(2):  # two schedules (the seed is the job id)
        s = _session(getattr(faulty, name), every, job)
        # faulty jobs behave on the first iteration after profiling, then on every one
        k, message = _iterations_until_failed(s, every + 1)
        assert k <= every + 1 and fragment in message
        assert s.accounted >= 1


def test_unaccounted_iterations_run_bare() -> None:
    s = _session(zoo.vae, 8)
    live = s.tracker.live
    for _ in range(40):
        s.iterate(0, s.budget_e)
    assert 40 / 8 <= s.accounted < 40  # at least one in every 8, and not all of them
    assert s.tracker.live == live  # the well-behaved job's accounted iterations leave nothing


def _leaks_on_even_iterations(kind: Kind = "train") -> JobParts:
    """Leaks on every other iteration after profiling: a stride-2 sampler in the wrong phase
    would never see it."""
    parts = zoo.vae(kind)
    step, count, kept = parts.step, [0], []

    def wrapped(batch: object) -> None:
        count[0] += 1
        step(batch)
        if count[0] > faulty.PROFILED and count[0] % 2 == 0:
            kept.append(torch.ones(256))

    parts.step = wrapped
    return parts


def test_a_periodic_leak_cannot_hide_between_samples() -> None:
    caught = []
    for job in range(4):
        s = _session(_leaks_on_even_iterations, 8, job)
        k, message = _iterations_until_failed(s, 120)
        caught.append(k)
        assert "leaks memory" in message
    assert max(caught) <= 120 and len(set(caught)) > 1  # different seeds, different moments


def test_the_host_cache_keeps_freed_buffers_mapped() -> None:
    if not cache_host_memory(2**30):
        pytest.skip("no glibc mallopt on this platform")
    size = 8 * 2**20  # well above glibc's default 128 KiB mmap threshold
    for _ in range(3):
        torch.empty(size, dtype=torch.uint8).fill_(1)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for _ in range(20):
        torch.empty(size, dtype=torch.uint8).fill_(1)  # allocated, touched, freed
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
    # without the cache an 8 MiB buffer mapped afresh faults in 2048 pages per iteration
    assert faults < 20 * (size // 4096) // 10
