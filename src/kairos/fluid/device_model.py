"""The simulator's hidden ground truth for iteration times on GPUs (spec 6.4).

Packing: `p` trials sharing a GPU each take `t1 max(1, sum u) (1 + k gamma (p - 1))`. Scaling:
a gang of `w` GPUs runs `steps` optimizer steps, each `tau / w` of compute plus a ring
all-reduce of fp32 gradients over 10 Gb/s links. With the defaults, packing pays at overhead
multiplier k <= 2 and switches itself off (c = 1) at k = 10.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kairos.fluid.core.profiler import ring_allreduce_time
from kairos.fluid.workloads import TrialTruth


@dataclass(frozen=True)
class DeviceModel:
    gamma: float = 0.15  # interference per extra co-located trial
    k: float = 1.0  # packing-overhead multiplier (Fig. 3.13a)
    bandwidth: float = 1.25e9  # bytes/s (10 GbE)
    latency: float = 1e-3  # per hop

    def packed(self, me: TrialTruth, mates: Sequence[TrialTruth]) -> float:
        """Iteration time of `me` sharing a GPU with `mates` (others, not `me`)."""
        p = len(mates) + 1
        load = me.util + sum(m.util for m in mates)
        return me.t1 * max(1.0, load) * self.interference(p)

    def interference(self, p: int) -> float:
        return 1.0 + self.k * self.gamma * (p - 1)

    def gang(self, me: TrialTruth, w: int) -> float:
        tau = me.t1 / me.steps
        return ring_allreduce_time(w, me.steps, tau, 4 * me.params, self.bandwidth, self.latency)

    def packed_util(self, me: TrialTruth, mates: Sequence[TrialTruth]) -> float:
        """The share of its GPU's busy fraction that `me` accounts for while packed."""
        load = me.util + sum(m.util for m in mates)
        return me.util * min(1.0, load) / load / self.interference(len(mates) + 1)

    def gang_util(self, me: TrialTruth, w: int) -> float:
        """Busy fraction of each of the gang's GPUs: compute share of the step time."""
        compute = me.t1 / w
        return me.util * compute / self.gang(me, w)
