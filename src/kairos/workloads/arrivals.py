"""Arrival processes: when requests come.

Each process is a validated pydantic config with `sample(horizon_s, rng)` returning sorted
arrival times in `[0, horizon_s)`. Randomness comes only from the generator passed in.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator


class _Process(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def mean_rate(self) -> float:
        raise NotImplementedError

    def sample(self, horizon_s: float, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


def _homogeneous(rate: float, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Exact Poisson arrivals on [start, end): a Poisson count, then sorted uniform times."""
    if end <= start or rate <= 0:
        return np.empty(0)
    n = rng.poisson(rate * (end - start))
    return np.sort(rng.uniform(start, end, size=n))


class Poisson(_Process):
    """Memoryless arrivals at a constant rate (requests/s)."""

    kind: Literal["poisson"] = "poisson"
    rate: PositiveFloat

    def mean_rate(self) -> float:
        return self.rate

    def sample(self, horizon_s: float, rng: np.random.Generator) -> np.ndarray:
        return _homogeneous(self.rate, 0.0, horizon_s, rng)


class Gamma(_Process):
    """Gamma-distributed gaps, as the vLLM serving benchmark's `--burstiness`.

    `burstiness` is the gamma shape k; gaps have mean 1/rate and coefficient of variation
    1/sqrt(k). k = 1 is Poisson, k < 1 burstier, k > 1 smoother.
    """

    kind: Literal["gamma"] = "gamma"
    rate: PositiveFloat
    burstiness: PositiveFloat = 1.0

    @property
    def cv(self) -> float:
        return float(1.0 / np.sqrt(self.burstiness))

    def mean_rate(self) -> float:
        return self.rate

    def sample(self, horizon_s: float, rng: np.random.Generator) -> np.ndarray:
        scale = 1.0 / (self.rate * self.burstiness)
        times: list[np.ndarray] = []
        t = 0.0
        chunk = max(16, int(self.rate * horizon_s * 1.1) + 16)
        while t < horizon_s:
            gaps = rng.gamma(self.burstiness, scale, size=chunk)
            block = t + np.cumsum(gaps)
            times.append(block)
            t = float(block[-1])
        out = np.concatenate(times) if times else np.empty(0)
        return out[out < horizon_s]


class CyclicBurst(_Process):
    """The Andes burst pattern: each cycle opens with a burst, then a calmer phase.

    Average rate `rate`; during the burst (a fraction `duration` of each `cycle_s`) the rate
    is `intensity * rate`; the rest of the cycle runs at `rate * (1 - intensity*duration) /
    (1 - duration)`, so the long-run mean stays `rate`. Poisson arrivals inside each phase.
    """

    kind: Literal["cyclic_burst"] = "cyclic_burst"
    rate: PositiveFloat
    intensity: float = Field(2.0, ge=1.0)
    duration: float = Field(0.35, gt=0.0, lt=1.0)
    cycle_s: PositiveFloat = 1200.0

    @model_validator(mode="after")
    def _feasible(self) -> CyclicBurst:
        if self.intensity * self.duration >= 1.0:
            raise ValueError(
                f"intensity*duration must be < 1 so the calm phase has a non-negative rate; "
                f"got {self.intensity}*{self.duration} = {self.intensity * self.duration:g}"
            )
        return self

    @property
    def burst_rate(self) -> float:
        return self.intensity * self.rate

    @property
    def calm_rate(self) -> float:
        return self.rate * (1.0 - self.intensity * self.duration) / (1.0 - self.duration)

    def mean_rate(self) -> float:
        return self.rate

    def phases(self, horizon_s: float) -> list[tuple[float, float, float]]:
        """(start, end, rate) for every phase that begins before the horizon."""
        out: list[tuple[float, float, float]] = []
        burst_len = self.duration * self.cycle_s
        start = 0.0
        while start < horizon_s:
            mid = start + burst_len
            end = start + self.cycle_s
            out.append((start, min(mid, horizon_s), self.burst_rate))
            if mid < horizon_s:
                out.append((mid, min(end, horizon_s), self.calm_rate))
            start = end
        return out

    def rate_at(self, t: float) -> float:
        return (
            self.burst_rate if (t % self.cycle_s) < self.duration * self.cycle_s else self.calm_rate
        )

    def sample(self, horizon_s: float, rng: np.random.Generator) -> np.ndarray:
        parts = [_homogeneous(r, a, b, rng) for a, b, r in self.phases(horizon_s)]
        return np.concatenate(parts) if parts else np.empty(0)


class TraceReplay(_Process):
    """Replays recorded arrival times, optionally stretched in time or rescaled to a rate.

    `time_scale` multiplies every timestamp (2.0 = half the rate). `rate`, when given, overrides
    it so the replay's mean rate is exactly `rate` over the trace's span.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    kind: Literal["replay"] = "replay"
    times: tuple[float, ...]
    time_scale: PositiveFloat = 1.0
    rate: PositiveFloat | None = None

    @model_validator(mode="after")
    def _sorted(self) -> TraceReplay:
        t = np.asarray(self.times)
        if t.size and (np.any(np.diff(t) < 0) or t[0] < 0):
            raise ValueError("replayed arrival times must be non-negative and non-decreasing")
        return self

    def effective_scale(self) -> float:
        if self.rate is None:
            return self.time_scale
        t = np.asarray(self.times)
        span = float(t[-1] - t[0]) if t.size > 1 else 0.0
        if span <= 0:
            return self.time_scale
        return (len(t) / span) / self.rate

    def mean_rate(self) -> float:
        t = np.asarray(self.times)
        span = float(t[-1] - t[0]) if t.size > 1 else 1.0
        return len(t) / (span * self.effective_scale())

    def sample(self, horizon_s: float, rng: np.random.Generator) -> np.ndarray:
        t = np.asarray(self.times, dtype=float)
        if t.size == 0:
            return t
        out = (t - t[0]) * self.effective_scale()
        return out[out < horizon_s]


ArrivalProcess = Annotated[Poisson | Gamma | CyclicBurst | TraceReplay, Field(discriminator="kind")]


def arrival_process(spec: dict[str, object]) -> Poisson | Gamma | CyclicBurst | TraceReplay:
    """Build a process from a plain dict such as `{"kind": "poisson", "rate": 2.0}`."""
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Poisson | Gamma | CyclicBurst | TraceReplay] = TypeAdapter(ArrivalProcess)
    return adapter.validate_python(spec)
