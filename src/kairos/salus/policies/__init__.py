"""The policies of spec 3.8, one a file: FIFO (the baseline), PACK, SRTF and FAIR.

Importing this package registers each under `("salus", name)` in `kairos.registry.POLICIES`.
"""

from typing import Any

from kairos.registry import POLICIES
from kairos.salus.policies.fair import Fair
from kairos.salus.policies.fifo import Fifo
from kairos.salus.policies.pack import Pack
from kairos.salus.policies.srtf import Srtf
from kairos.salus.policy import Policy

__all__ = ["Fair", "Fifo", "Pack", "Srtf", "make_policy"]


def make_policy(name: str, **options: Any) -> Policy:
    """A fresh policy by name (fifo, pack, srtf, fair, or a plug-in), with its options."""
    policy = POLICIES.create("salus", name, **options)
    if not isinstance(policy, Policy):
        raise TypeError(f"salus policy {name!r} made a {type(policy).__name__}, not a Policy")
    return policy
