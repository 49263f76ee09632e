"""Solo-latency workloads for the Orloj experiments (spec section 4, [P] choices).

A workload is a model's requests seen as a mixture of applications: each application has its
own solo-latency distribution and the same share of arrivals (the paper splits a dataset into
short- and long-running groups and picks groups at random; each group is one application id,
which is what exercises Orloj's per-application tracking). Three families:

* synthetic (Tables C.1/C.2): mode j is a normal at 2 + 8(j - 1) units with its own std,
  truncated below at 0.1 unit by rejection; one unit is 10 ms, so three modes give a mean of
  about 100 ms and a P99 of about 200 ms;
* real-world stand-ins (Table 4.1): one distribution fitted to the published mean and P99 (NLP:
  shifted lognormal; CV: 3-4 clusters, one per exit point), split at its median into a short
  and a long application;
* static (Table C.3): a constant solo latency (5 ms ResNet-like, 8 ms Inception-like).

Everything samples from an injected generator; reference statistics (P99 for the SLO, the
capacity for the arrival rate) use fixed seeds so that they are the same in every process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np
from scipy import optimize, stats

from kairos.orloj.batchdist import BatchLatencyModel

UNIT_MS = 10.0  # one "unit" of the synthetic distributions
FLOOR_UNITS = 0.1  # synthetic modes are truncated below at 0.1 unit
Z99 = float(stats.norm.ppf(0.99))
REFERENCE_SAMPLES = 200_000  # draws behind P99/mean/median estimates (fixed seed)


class SoloDistribution(Protocol):
    """Solo latencies of one application (frozen dataclasses: hashable, so cacheable)."""

    def __hash__(self) -> int: ...

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """`n` solo latencies in ms."""
        ...


@dataclass(frozen=True)
class Constant:
    value_ms: float

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(n, self.value_ms)


@dataclass(frozen=True)
class TruncatedNormal:
    """A normal cut below at `floor_ms` by rejection (so the kept part keeps its shape)."""

    mean_ms: float
    std_ms: float
    floor_ms: float

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.std_ms <= 0:
            return np.full(n, max(self.mean_ms, self.floor_ms))
        out = np.empty(0)
        while out.size < n:
            draw = rng.normal(self.mean_ms, self.std_ms, size=2 * (n - out.size) + 16)
            out = np.concatenate([out, draw[draw >= self.floor_ms]])
        return out[:n]


@dataclass(frozen=True)
class ShiftedLognormal:
    """`shift + exp(mu + sigma Z)`: sequence-length-driven NLP latencies have a floor (the
    encoder / first step) and a right-skewed tail."""

    shift_ms: float
    mu: float
    sigma: float

    @staticmethod
    def fit(mean_ms: float, p99_ms: float, sigma: float = 0.5) -> ShiftedLognormal:
        """Match the mean and P99 with a fixed shape `sigma`, solving for the shift; when the
        tail is too heavy for that shape (negative shift), drop the shift and solve sigma."""
        if not 0 < mean_ms < p99_ms:
            raise ValueError(f"need 0 < mean < p99, got mean={mean_ms}, p99={p99_ms}")
        ratio = float(np.exp(Z99 * sigma - sigma**2 / 2))  # (p99 - shift) / (mean - shift)
        shift = (ratio * mean_ms - p99_ms) / (ratio - 1)
        if shift < 0:
            shift = 0.0
            target = np.log(p99_ms / mean_ms)
            sigma = float(optimize.brentq(lambda s: Z99 * s - s * s / 2 - target, 1e-6, Z99))
        mu = float(np.log(mean_ms - shift) - sigma**2 / 2)
        return ShiftedLognormal(float(shift), mu, float(sigma))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.shift_ms + rng.lognormal(self.mu, self.sigma, size=n)


@dataclass(frozen=True)
class Clusters:
    """A few distinct latencies (one per early-exit point of a CV model), each with a small
    relative jitter."""

    centers_ms: tuple[float, ...]
    weights: tuple[float, ...]
    jitter: float = 0.05

    @staticmethod
    def fit(
        mean_ms: float, p99_ms: float, k: int, top_weight: float = 0.05, jitter: float = 0.05
    ) -> Clusters:
        """`k` clusters geometrically spaced up to the top one, which holds `top_weight` of
        the mass and contains the P99; the lowest center is solved so the mean matches."""
        if k < 2 or not 0.01 < top_weight < 1:
            raise ValueError("need k >= 2 and 0.01 < top_weight < 1")
        z = float(stats.norm.ppf(1 - 0.01 / top_weight))
        top = p99_ms / (1 + z * jitter)
        rest = (1 - top_weight) / (k - 1)
        weights = (*([rest] * (k - 1)), top_weight)

        def centers(low: float) -> np.ndarray:
            return low * (top / low) ** (np.arange(k) / (k - 1))

        def gap(low: float) -> float:
            return float(np.dot(weights, centers(low))) - mean_ms

        if not gap(1e-9 * top) < 0 < gap(top):
            raise ValueError(f"cannot fit {k} clusters to mean={mean_ms}, p99={p99_ms}")
        low = float(optimize.brentq(gap, 1e-9 * top, top))
        return Clusters(tuple(float(c) for c in centers(low)), weights, jitter)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        idx = rng.choice(len(self.centers_ms), size=n, p=np.asarray(self.weights))
        c = np.asarray(self.centers_ms)[idx]
        return np.maximum(c * (1 + self.jitter * rng.standard_normal(n)), 0.1 * c)


@dataclass(frozen=True)
class HalfOf:
    """The part of `base` below (`upper=False`) or above its median: one dataset group."""

    base: SoloDistribution
    upper: bool

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        med = reference_stats(self.base)[2]
        out = np.empty(0)
        while out.size < n:
            draw = self.base.sample(2 * (n - out.size) + 16, rng)
            out = np.concatenate([out, draw[(draw >= med) if self.upper else (draw < med)]])
        return out[:n]


@dataclass(frozen=True)
class Scaled:
    """`base` with every latency multiplied by `factor` (the Fig 4.14 scale-down)."""

    base: SoloDistribution
    factor: float

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.factor * self.base.sample(n, rng)


@dataclass(frozen=True)
class Workload:
    """Applications (name, distribution) with equal shares of the arrivals."""

    name: str
    apps: tuple[tuple[str, SoloDistribution], ...]

    @property
    def app_names(self) -> tuple[str, ...]:
        return tuple(a for a, _ in self.apps)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(application index, solo latency ms) for `n` requests."""
        app = rng.integers(0, len(self.apps), size=n)
        solo = np.empty(n)
        for i, (_, dist) in enumerate(self.apps):
            mask = app == i
            solo[mask] = dist.sample(int(mask.sum()), rng)
        return app, solo

    def scaled(self, factor: float) -> Workload:
        if factor == 1.0:
            return self
        if factor <= 0:
            raise ValueError(f"scale factor must be > 0, got {factor}")
        return Workload(
            f"{self.name}x{factor:g}", tuple((a, Scaled(d, factor)) for a, d in self.apps)
        )

    def offline_profile(self, n_per_app: int, rng: np.random.Generator) -> dict[str, list[float]]:
        """`n_per_app` solo runs per application: the offline profile a deployment starts
        from (the paper's distributions came from the datasets)."""
        return {a: d.sample(n_per_app, rng).tolist() for a, d in self.apps}

    @property
    def mean_ms(self) -> float:
        return reference_stats(self)[0]

    @property
    def p99_ms(self) -> float:
        """P99 of all requests' solo latency: the SLO unit (SLO = m x P99)."""
        return reference_stats(self)[1]


@lru_cache(maxsize=256)
def reference_stats(dist: SoloDistribution | Workload) -> tuple[float, float, float]:
    """(mean, P99, median) from a fixed-seed sample, identical in every process."""
    rng = np.random.default_rng(20240601)
    x = (
        dist.sample(REFERENCE_SAMPLES, rng)[1]
        if isinstance(dist, Workload)
        else dist.sample(REFERENCE_SAMPLES, rng)
    )
    return float(x.mean()), float(np.percentile(x, 99)), float(np.median(x))


def capacity_per_ms(workload: Workload, model: BatchLatencyModel, k: int = 16) -> float:
    """C = k / E[g_k(max of k draws)] requests per ms: the throughput of back-to-back full
    batches of the largest size under the workload's mixture (the arrival-rate scale)."""
    rng = np.random.default_rng(7)
    _, solo = workload.sample(20_000 * k, rng)
    longest = solo.reshape(-1, k).max(axis=1)
    return k / float(np.mean(model.g(k, longest)))


def synthetic(
    name: str, stds: Sequence[float], unit_ms: float = UNIT_MS, spacing: float = 8.0
) -> Workload:
    """One application per mode: mode j (0-based) at 2 + spacing*j units, std stds[j] units."""
    apps = tuple(
        (
            f"mode{j}",
            TruncatedNormal((2 + spacing * j) * unit_ms, s * unit_ms, FLOOR_UNITS * unit_ms),
        )
        for j, s in enumerate(stds)
    )
    return Workload(name, apps)


def split_at_median(name: str, base: SoloDistribution) -> Workload:
    return Workload(name, (("short", HalfOf(base, False)), ("long", HalfOf(base, True))))


MODALITY = ("one", "two", "three", "four", "five", "six", "seven", "eight")
# Table 4.1: (mean ms, P99 ms, family); CV models get k clusters.
REAL_WORLD: dict[str, tuple[float, float, str]] = {
    "rdinet-cifar": (683.15, 2667.54, "cv4"),
    "skipnet-imagenet": (3.24, 5.56, "cv3"),
    "blenderbot-convAI": (200.39, 242.27, "nlp"),
    "blenderbot-cornell": (203.22, 247.04, "nlp"),
    "gpt-convAI": (79.47, 143.40, "nlp"),
    "gpt-cornell": (94.84, 161.69, "nlp"),
    "bart-cnn": (774.66, 1101.99, "nlp"),
    "t5-cnn": (552.91, 797.28, "nlp"),
    "fsmt-wmt": (189.30, 319.31, "nlp"),
    "mbart-wmt": (432.38, 729.87, "nlp"),
}
STATIC_MS = {"resnet-imagenet": 5.0, "inception-imagenet": 8.0}
BIMODAL = {
    "std-0.5": (0.5, 0.5),
    "std-1": (1.0, 1.0),
    "std-2": (2.0, 2.0),
    "std-2/0.5": (2.0, 0.5),
    "std-0.5/2": (0.5, 2.0),
}


def workload_names() -> list[str]:
    return [
        *BIMODAL,
        *(f"{m}-modal" for m in MODALITY),
        *REAL_WORLD,
        *STATIC_MS,
    ]


def get_workload(name: str, scale: float = 1.0) -> Workload:
    """A named workload (the paper's case IDs of Tables C.1-C.7), optionally scaled."""
    return _named(name).scaled(scale)


@lru_cache(maxsize=64)
def _named(name: str) -> Workload:
    if name in BIMODAL:
        return synthetic(name, BIMODAL[name])
    if name.endswith("-modal") and name.removesuffix("-modal") in MODALITY:
        return synthetic(name, [1.0] * (MODALITY.index(name.removesuffix("-modal")) + 1))
    if name in REAL_WORLD:
        mean, p99, family = REAL_WORLD[name]
        base: SoloDistribution = (
            ShiftedLognormal.fit(mean, p99)
            if family == "nlp"
            else Clusters.fit(mean, p99, k=int(family[2:]))
        )
        return split_at_median(name, base)
    if name in STATIC_MS:
        return Workload(name, (("static", Constant(STATIC_MS[name])),))
    raise KeyError(f"unknown workload {name!r}; known: {', '.join(workload_names())}")
