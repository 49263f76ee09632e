"""Venn's policies behind one interface: `plan(view) -> Plan` (see `base.py`)."""

from kairos.venn.policies.fifo import FIFOPolicy
from kairos.venn.policies.las import LASPolicy
from kairos.venn.policies.random_match import RandomPolicy, RandomPurePolicy
from kairos.venn.policies.registry import POLICIES, make_policy
from kairos.venn.policies.srsf import SRSFPolicy
from kairos.venn.policies.venn import VennConfig, VennPolicy
from kairos.venn.policy import DevicePolicy, OrderedPolicy

__all__ = [
    "POLICIES",
    "DevicePolicy",
    "FIFOPolicy",
    "LASPolicy",
    "OrderedPolicy",
    "RandomPolicy",
    "RandomPurePolicy",
    "SRSFPolicy",
    "VennConfig",
    "VennPolicy",
    "make_policy",
]
