"""Synthetic tuning workloads with a hidden ground truth (spec 6.4): per configuration, how
long an iteration takes and how much of a GPU it uses, how big the model is, and the learning
curve it follows. Fluid never reads these; it sees only what the backend measures.

A configuration is a point in the unit cube (`x0..x{k-1}` in [0, 1]); tuners sample there.
Quality is a few smooth bumps (a few good regions, many poor), and each preset's target is
calibrated so that about 2% of random configurations reach it within `max_t`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TrialTruth:
    t1: float  # seconds per iteration alone on one GPU
    util: float  # fraction of a GPU one trial keeps busy
    params: float  # parameter count (gradient bytes = 4 x params)
    steps: int  # optimizer steps per iteration (global batch fixed under data parallelism)
    m_inf: float
    tau: float  # iterations to close 1/e of the gap to m_inf

    def metric(self, iteration: int, m0: float, noise: float) -> float:
        return self.m_inf - (self.m_inf - m0) * math.exp(-iteration / self.tau) + noise


@dataclass(frozen=True)
class Workload:
    """A Table 3.3-like task. `size` scales work and utilisation for the model-size sweep."""

    name: str
    dims: int
    t1: float
    steps: int
    params: float
    util: tuple[float, float] = (0.3, 0.6)
    runtime_cv: float = 0.3
    m0: float = 0.1
    m_lo: float = 0.3
    m_hi: float = 0.95
    tau_lo: float = 15.0
    tau_hi: float = 60.0
    noise: float = 0.005
    max_t: int = 81
    bumps: int = 3

    def centers(self) -> np.ndarray:
        seed = sum(ord(ch) for ch in self.name)
        return np.random.default_rng(seed).random((self.bumps, self.dims))

    def quality(self, x: np.ndarray) -> float:
        d2 = ((self.centers() - x) ** 2).sum(axis=1)
        return float(np.exp(-d2 / (2 * 0.25**2)).max())

    def point(self, config: dict[str, Any]) -> np.ndarray:
        """The configuration as a point of the unit cube. A search space must name exactly
        `x0`..`x{dims-1}`, each in [0, 1] (an Optuna space, a Tune param_space): a missing,
        extra or out-of-range name would otherwise fail deep in a run or be silently ignored."""
        names = [f"x{i}" for i in range(self.dims)]
        if sorted(config) != sorted(names):
            raise ValueError(
                f"workload {self.name!r} has {self.dims} dimensions: a configuration must name "
                f"exactly {', '.join(names)} (each in [0, 1]), got {', '.join(sorted(config))}"
            )
        x = np.array([float(config[n]) for n in names])
        if not np.all((x >= 0.0) & (x <= 1.0)):
            bad = {n: config[n] for n, v in zip(names, x, strict=True) if not 0.0 <= v <= 1.0}
            raise ValueError(f"workload {self.name!r}: values must lie in [0, 1], got {bad}")
        return x

    def truth(self, config: dict[str, Any], rng: np.random.Generator) -> TrialTruth:
        x = self.point(config)
        q = self.quality(x)
        spread = rng.lognormal(-(self.runtime_cv**2) / 2, self.runtime_cv) if self.runtime_cv else 1
        size = 0.6 + 0.8 * x[0]  # the first coordinate stands for model width (1 at the centre)
        return TrialTruth(
            t1=self.t1 * size * spread,
            util=float(rng.uniform(*self.util)),
            params=self.params * size,
            steps=self.steps,
            m_inf=self.m_lo + (self.m_hi - self.m_lo) * q,
            tau=self.tau_lo + (self.tau_hi - self.tau_lo) * (1 - q),
        )

    def typical(self) -> TrialTruth:
        """The nominal trial the profiler measures: the preset's own time, size and mean
        utilisation (the learning-curve fields are unused there)."""
        return TrialTruth(self.t1, sum(self.util) / 2, self.params, self.steps, self.m_hi, 1.0)

    @cached_property
    def target(self) -> float:
        """The 98th percentile of the noiseless metric at `max_t` over random configurations."""
        rng = np.random.default_rng(0)
        finals = []
        for _ in range(2000):
            cfg = {f"x{i}": v for i, v in enumerate(rng.random(self.dims))}
            truth = self.truth(cfg, rng)
            finals.append(truth.metric(self.max_t, self.m0, 0.0))
        return float(np.quantile(finals, 0.98))


PRESETS: dict[str, Workload] = {
    # communication-bound at 10 Gb/s: scaling pays up to 2 GPUs (Fig. 3.13b)
    "cifar": Workload("cifar", dims=4, t1=10.0, steps=782, params=0.6e6),
    "dcgan": Workload("dcgan", dims=2, t1=6.0, steps=469, params=0.6e6),
    # compute-heavy steps: keeps gaining at 4 and more GPUs
    "wlm": Workload("wlm", dims=6, t1=20.0, steps=100, params=2.0e6),
}


def preset(name: str, **changes: Any) -> Workload:
    try:
        base = PRESETS[name]
    except KeyError:
        raise KeyError(f"no workload {name!r}; known: {', '.join(PRESETS)}") from None
    if not changes:
        return base
    fields = {**base.__dict__, **changes}
    fields.pop("target", None)
    return Workload(**fields)
