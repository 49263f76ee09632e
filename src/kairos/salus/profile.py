"""Memory classes and the per-job profile that admission reasons about (spec 2.4, 3.1, 6.9).

Salus never moves a job's persistent memory (model + framework-internal) and gives its ephemeral
memory a lane only while one of its iterations runs, so a job is summarised for scheduling by
four numbers: persistent bytes `P`, ephemeral peak `E`, solo iteration time `t_iter` and GPU
busy fraction `u`. The simulator's profiles come from the Salus evaluation's measurements
(`shared/data/salus_workloads.csv`, via `kairos.salus.catalog`); the real service measures the
same four numbers with its profiler.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

MIB = 1 << 20
GIB = 1 << 30


class MemoryClass(enum.Enum):
    """Where an allocation belongs (spec 2.4). Only EPHEMERAL lives in a lane; the other two
    are persistent and stay resident for the whole job, which is why a switch copies nothing."""

    MODEL = "model"  # parameters and optimizer state: whole job, a few large chunks
    EPHEMERAL = "ephemeral"  # activations, scratch: allocated and freed within one iteration
    FRAMEWORK = "framework"  # bookkeeping, input buffers, library handles: persists

    @property
    def persistent(self) -> bool:
        return self is not MemoryClass.EPHEMERAL


class ProfileError(ValueError):
    """A profile (or the file it came from) that cannot describe a job; the message names the
    file, row and column where there is one, and says what a valid value looks like."""


@dataclass(frozen=True)
class Profile:
    """What admission and the simulator know of a workload.

    `persistent` (P) and `ephemeral` (E) are bytes: P stays resident from admission to exit,
    E is the per-iteration peak above P. `t_iter` is the solo (exclusive) iteration time in
    seconds; `busy` (u) the fraction of that time the GPU is busy, which the simulator's capped
    processor sharing uses (spec 6.9). `source` says where the numbers came from ("csv" for
    measured rows, "assumed" for the workloads the data file lacks) so reports can flag them.
    """

    workload: str
    persistent: int
    ephemeral: int
    t_iter: float
    busy: float = 1.0
    source: str = "csv"

    def __post_init__(self) -> None:
        if not isinstance(self.persistent, int) or self.persistent < 0:
            raise ProfileError(f"{self.workload}: persistent bytes must be an int >= 0")
        if not isinstance(self.ephemeral, int) or self.ephemeral < 0:
            raise ProfileError(f"{self.workload}: ephemeral bytes must be an int >= 0")
        if not (math.isfinite(self.t_iter) and self.t_iter > 0):
            raise ProfileError(f"{self.workload}: t_iter must be a finite time > 0 s")
        if not (math.isfinite(self.busy) and 0 < self.busy <= 1):
            raise ProfileError(f"{self.workload}: busy fraction u must lie in (0, 1]")

    @property
    def peak(self) -> int:
        """P + E: the most this job ever holds while one of its iterations runs."""
        return self.persistent + self.ephemeral

    @property
    def model(self) -> str:
        """`resnet50` of `resnet50_50`: the network, without the batch size."""
        return self.workload.rsplit("_", 1)[0]

    @property
    def batch(self) -> str:
        return self.workload.rsplit("_", 1)[-1]

    def with_margins(
        self, margin_p: float = 0.10, margin_total: float = 0.05, capacity: int | None = None
    ) -> Profile:
        """The profile admission should use: P inflated by `margin_p`, P + E by `margin_total`
        (spec 3.1 step 5, the release's defaults), to absorb fragmentation the byte totals do
        not see; P + E capped at `capacity` so a job that fitted when profiled still fits."""
        if margin_p < 0 or margin_total < 0:
            raise ProfileError(f"{self.workload}: margins must be >= 0")
        # rounded first so that 100 x 1.1 is 110 bytes, not 111
        p = math.ceil(round(self.persistent * (1 + margin_p), 6))
        total = max(p, math.ceil(round(self.peak * (1 + margin_total), 6)))
        if capacity is not None:
            total = min(total, capacity)
            p = min(p, total)
        return replace(self, persistent=p, ephemeral=total - p)

    def scaled(self, factor: float) -> Profile:
        """The same memory with iterations `factor` times as long (to model overhead `o`)."""
        return replace(self, t_iter=self.t_iter * factor)
