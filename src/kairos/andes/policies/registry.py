"""Policies by name: `fcfs`, `sarathi`, `lqsf`, `andes`, `andes-dp`."""

from __future__ import annotations

from typing import Any

from kairos.andes.policies.andes import AndesConfig, AndesPolicy, andes_dp_policy, lqsf_policy
from kairos.andes.policies.base import Policy
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policies.sarathi import SarathiPolicy

POLICY_NAMES = ("fcfs", "sarathi", "lqsf", "andes", "andes-dp")


def make_policy(name: str, **andes_overrides: Any) -> Policy:
    """A fresh policy object (policies keep small per-run state, so never share one)."""
    cfg = AndesConfig(**andes_overrides) if andes_overrides else None
    if name == "fcfs":
        return FCFSPolicy()
    if name == "sarathi":
        return SarathiPolicy()
    if name == "lqsf":
        return lqsf_policy(cfg)
    if name == "andes":
        return AndesPolicy(cfg)
    if name == "andes-dp":
        return andes_dp_policy(cfg)
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICY_NAMES)}")
