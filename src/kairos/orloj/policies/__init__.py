"""Every Orloj-style scheduler, one a file, as `BatchPolicy` objects (spec section 4.1).

`orloj.py` is the paper's policy (Algorithm 4.1); Clockwork, Nexus and Clipper are its
baselines; EDF and the timeout batcher are extras (a deadline-aware point-estimate scheduler,
and the Triton / Ray Serve style batcher). The one-batch-at-a-time baselines build on
`OneBatchPolicy` (`base.py`). `systems.make_system` builds any of them by name.
"""

from kairos.orloj.policies.base import OneBatchPolicy
from kairos.orloj.policies.clipper import ClipperPolicy
from kairos.orloj.policies.clockwork import ClockworkPolicy
from kairos.orloj.policies.edf import EDFPolicy
from kairos.orloj.policies.nexus import NexusPolicy, plan_batch_size
from kairos.orloj.policies.orloj import OrlojPolicy
from kairos.orloj.policies.timeout_batcher import TimeoutBatcher

__all__ = [
    "ClipperPolicy",
    "ClockworkPolicy",
    "EDFPolicy",
    "NexusPolicy",
    "OneBatchPolicy",
    "OrlojPolicy",
    "TimeoutBatcher",
    "plan_batch_size",
]
