"""The systems Orloj is compared with, as `BatchPolicy` objects (spec section 4.1).

Clockwork, Nexus and Clipper are the paper's baselines; EDF and the timeout batcher are extras
(a deadline-aware point-estimate scheduler, and the Triton / Ray Serve style batcher).
"""

from kairos.orloj.baselines.clipper import ClipperPolicy
from kairos.orloj.baselines.clockwork import ClockworkPolicy
from kairos.orloj.baselines.edf import EDFPolicy
from kairos.orloj.baselines.nexus import NexusPolicy, plan_batch_size
from kairos.orloj.baselines.timeout_batcher import TimeoutBatcher

__all__ = [
    "ClipperPolicy",
    "ClockworkPolicy",
    "EDFPolicy",
    "NexusPolicy",
    "TimeoutBatcher",
    "plan_batch_size",
]
