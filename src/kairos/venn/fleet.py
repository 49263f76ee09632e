"""The device side of a simulation: who checks in when, which atom each device is, how fast.

A `Fleet` joins a device population (eligibility attributes, speed factors), the requirements
that cut it into atoms, an availability source (check-ins), and the response-time model. It
also pre-draws, chunk by chunk, each check-in's task response time and dispatch delay, so every
policy sees the same device outcomes for the same check-in (common random numbers: differences
between policies are the policies', not the dice's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kairos.fl.availability import CheckInSource
from kairos.fl.devices import DevicePopulation
from kairos.fl.requirements import Requirement, signatures
from kairos.fl.timing import ResponseModel


@dataclass(frozen=True)
class CheckInChunk:
    """One chunk of check-ins as Python lists (fast per-element access in the event loop)."""

    device: list[int]
    start: list[float]
    end: list[float]
    response_s: list[float]
    delay_s: list[float]

    def __len__(self) -> int:
        return len(self.start)


@dataclass(frozen=True)
class Fleet:
    population: DevicePopulation
    requirements: tuple[Requirement, ...]
    source: CheckInSource
    response: ResponseModel = field(default_factory=ResponseModel)
    dispatch_delay_s: float = 2.0  # a dispatched device starts after U(0, this)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.source.n_devices > len(self.population):
            raise ValueError(
                f"the availability source has {self.source.n_devices} devices but the "
                f"population only {len(self.population)}"
            )

    def atoms(self) -> np.ndarray:
        """Every device's signature over the fleet's requirements."""
        return signatures(self.population, self.requirements)

    def chunk(self, k: int) -> CheckInChunk:
        c = self.source.chunk(k)
        rng = np.random.default_rng([self.seed, int(k), 0x7E55])
        pop = self.population
        rt = self.response.sample(pop.slowness[c.device], pop.bandwidth[c.device], rng)
        delay = rng.uniform(0.0, self.dispatch_delay_s, size=len(c))
        return CheckInChunk(
            c.device.tolist(), c.start.tolist(), c.end.tolist(), rt.tolist(), delay.tolist()
        )
