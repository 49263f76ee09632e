"""Jobs that misbehave on purpose, for the service's failure tests (the test server widens its
allow-list to this module). Each behaves during profiling, then breaks: the service must fail it
with a clear error and keep running the others."""

from __future__ import annotations

from typing import Any

import torch

from kairos.salus.runtime import zoo
from kairos.salus.runtime.job import JobParts, Kind

PROFILED = 8  # the profiler's default warm-up (3) + measured (5) iterations


def _after_profile(kind: Kind, bad: Any, **options: Any) -> JobParts:
    parts = zoo.vae(kind, **options)
    step, count = parts.step, [0]

    def wrapped(batch: Any) -> None:
        count[0] += 1
        step(batch)
        if count[0] > PROFILED + 1:
            bad()

    parts.step = wrapped
    return parts


def raising(kind: Kind = "train", **options: Any) -> JobParts:
    """Its step raises on the second iteration after profiling."""

    def bad() -> None:
        raise ValueError("this step is broken on purpose")

    return _after_profile(kind, bad, **options)


def leaking(kind: Kind = "train", **options: Any) -> JobParts:
    """Its step keeps a tensor alive across iterations (the classic stored `loss`)."""
    kept: list[torch.Tensor] = []
    return _after_profile(kind, lambda: kept.append(torch.ones(1024)), **options)


def greedy(kind: Kind = "train", **options: Any) -> JobParts:
    """Its step suddenly allocates far more ephemeral memory than its profile."""
    return _after_profile(kind, lambda: torch.ones(64 * 2**20 // 4).sum(), **options)


def not_a_job(kind: Kind = "train") -> int:
    """A factory that returns the wrong thing."""
    return 3
