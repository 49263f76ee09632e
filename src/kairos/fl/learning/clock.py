"""The FedScale-like clock for training rounds: who is online, and how long a task takes.

Time is simulated seconds. A task's duration reuses `kairos.fl.timing.ResponseModel` (compute
scaled by the device's slowness and jittered, plus two model transfers over its bandwidth) with
the compute part proportional to the samples the client processes, as FedScale does
(`samples x steps / speed`). Device speeds come from a `kairos.fl.DevicePopulation`: the AI
Benchmark catalogue of real phones or a synthetic lognormal population. Availability says who
is online at a time and when each goes offline (a task that outlives its device's session
fails). Three sources: always online (no traces, for unit tests), Bernoulli per time slot (the
spec's laptop-scale p_on in [0.1, 0.3]), and sessions from any `kairos.fl` check-in source
(diurnal model or a replayed FedScale trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from kairos.fl.availability import CheckInSource
from kairos.fl.devices import (
    DevicePopulation,
    aibenchmark_specs,
    population_from_specs,
    synthetic_population,
)
from kairos.fl.timing import ResponseModel


class Availability(Protocol):
    """Who can be selected at time t, and when each of them goes offline."""

    @property
    def n_clients(self) -> int: ...

    def online(self, t: float) -> np.ndarray:
        """Boolean mask over all clients: online at `t`."""
        ...

    def offline_at(self, clients: np.ndarray, t: float) -> np.ndarray:
        """When each of `clients` (online at `t`) goes offline."""
        ...


@dataclass(frozen=True)
class AlwaysOnline:
    """Every client is always online (no availability trace)."""

    clients: int

    @property
    def n_clients(self) -> int:
        return self.clients

    def online(self, t: float) -> np.ndarray:
        return np.ones(self.clients, dtype=bool)

    def offline_at(self, clients: np.ndarray, t: float) -> np.ndarray:
        return np.full(len(clients), np.inf)


@dataclass
class BernoulliAvailability:
    """Client i is online in each slot of `slot_s` seconds with probability `p_on[i]`,
    independently per slot. A slot's mask is a pure function of (seed, slot), so queries in any
    order agree and runs are reproducible."""

    p_on: np.ndarray
    slot_s: float = 600.0
    seed: int = 0
    lookahead: int = 64  # slots scanned for the end of an online run
    _cache: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.slot_s <= 0 or np.any((self.p_on < 0) | (self.p_on > 1)):
            raise ValueError("slot_s must be > 0 and every p_on in [0, 1]")

    @classmethod
    def uniform(
        cls,
        n_clients: int,
        rng: np.random.Generator,
        low: float = 0.1,
        high: float = 0.3,
        slot_s: float = 600.0,
    ) -> BernoulliAvailability:
        """p_on ~ U(low, high) per client (the spec's [0.1, 0.3])."""
        p = rng.uniform(low, high, size=n_clients)
        return cls(p_on=p, slot_s=slot_s, seed=int(rng.integers(2**63 - 1)))

    @property
    def n_clients(self) -> int:
        return len(self.p_on)

    def _slot(self, k: int) -> np.ndarray:
        if k not in self._cache:
            if len(self._cache) > 4 * self.lookahead:
                self._cache.clear()
            rng = np.random.default_rng([self.seed, k])
            self._cache[k] = rng.random(len(self.p_on)) < self.p_on
        return self._cache[k]

    def online(self, t: float) -> np.ndarray:
        return self._slot(int(t // self.slot_s)).copy()

    def offline_at(self, clients: np.ndarray, t: float) -> np.ndarray:
        k = int(t // self.slot_s)
        clients = np.asarray(clients, dtype=np.int64)
        end = np.full(len(clients), (k + 1 + self.lookahead) * self.slot_s)
        still = np.ones(len(clients), dtype=bool)
        for j in range(k + 1, k + 1 + self.lookahead):
            off = still & ~self._slot(j)[clients]
            end[off] = j * self.slot_s
            still &= ~off
            if not still.any():
                break
        return end


@dataclass
class SessionAvailability:
    """Online sessions from a `kairos.fl` check-in source; client i is device i.

    Sessions are looked up in the chunk holding `t` and the one before it (a session that
    started yesterday may still be running), so sessions must be shorter than one period.
    Time starts at 0 (chunk 0).
    """

    source: CheckInSource
    _cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False
    )

    @property
    def n_clients(self) -> int:
        return self.source.n_devices

    def _sessions(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = int(t // self.source.period_s)
        parts = []
        for j in (k - 1, k):
            if j < 0:  # time starts at 0: there is no chunk before the first
                continue
            if j not in self._cache:
                if len(self._cache) > 8:
                    self._cache.clear()
                c = self.source.chunk(j)
                self._cache[j] = (c.device, c.start, c.end)
            parts.append(self._cache[j])
        dev, start, end = (np.concatenate([p[i] for p in parts]) for i in range(3))
        live = (start <= t) & (t < end)
        return dev[live], start[live], end[live]

    def online(self, t: float) -> np.ndarray:
        dev, _, _ = self._sessions(t)
        mask = np.zeros(self.n_clients, dtype=bool)
        mask[dev] = True
        return mask

    def offline_at(self, clients: np.ndarray, t: float) -> np.ndarray:
        dev, _, end = self._sessions(t)
        last = np.full(self.n_clients, t)  # not online: offline now
        np.maximum.at(last, dev, end)
        return last[np.asarray(clients, dtype=np.int64)]


def device_population(
    n_clients: int,
    rng: np.random.Generator,
    source: Literal["aibenchmark", "synthetic"] = "aibenchmark",
    path: str | None = None,
) -> DevicePopulation:
    """Device speeds for `n_clients` clients: real phones from the AI Benchmark catalogue
    (slowness = measured latency / median, so fast phones really are fast) or a synthetic
    lognormal population (sigma 0.5, the spec's laptop-scale setting)."""
    if source == "aibenchmark":
        return population_from_specs(aibenchmark_specs(path), n_clients, rng, speed="benchmark")
    if source == "synthetic":
        return synthetic_population(n_clients, rng, slowness_sigma=0.5, bandwidth_sigma=0.5)
    raise ValueError(f"unknown device source {source!r}; use 'aibenchmark' or 'synthetic'")


@dataclass(frozen=True)
class ClientClock:
    """Task durations: `per_sample_s x work x slowness x jitter + 2 x transfer_s / bandwidth`.

    `response.compute_s` is read as seconds per processed sample on a slowness-1 device and
    `response.comm_s` as one model transfer at bandwidth factor 1.
    """

    population: DevicePopulation
    response: ResponseModel = field(default_factory=lambda: ResponseModel(compute_s=0.05))

    @classmethod
    def for_model(
        cls,
        population: DevicePopulation,
        n_params: int,
        per_sample_s: float = 0.05,
        bandwidth_mbps: float = 1.0,
        noise_sigma: float = 0.15,
    ) -> ClientClock:
        """A clock whose transfer time is the model's size (float32) over `bandwidth_mbps`."""
        transfer = n_params * 32 / (bandwidth_mbps * 1e6)
        return cls(
            population,
            ResponseModel(compute_s=per_sample_s, comm_s=transfer, noise_sigma=noise_sigma),
        )

    def durations(
        self, clients: np.ndarray, work: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Seconds each client takes to download, train on `work` samples and upload."""
        clients = np.asarray(clients, dtype=np.int64)
        if len(clients) and clients.max() >= len(self.population):
            raise ValueError(
                f"client {clients.max()} has no device (population of {len(self.population)})"
            )
        slowness = self.population.slowness[clients] * np.asarray(work, dtype=np.float64)
        return self.response.sample(slowness, self.population.bandwidth[clients], rng)
