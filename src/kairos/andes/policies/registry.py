"""Andes policies by name: `fcfs`, `sarathi`, `lqsf`, `andes`, `andes-dp`, and plug-ins.

The built-ins are registered in the shared registry (`kairos.registry.POLICIES`) under
("andes", name); a plug-in (entry point `andes.NAME` in `kairos.policies`) is a factory called
like them: with the `AndesConfig` built from the Andes options, or None when none were given.
"""

from __future__ import annotations

from typing import Any

from kairos.andes.policies.andes import AndesConfig, AndesPolicy, andes_dp_policy, lqsf_policy
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policies.sarathi import SarathiPolicy
from kairos.andes.policy import Policy
from kairos.registry import POLICIES


@POLICIES.register("andes", "fcfs")
def _fcfs(cfg: AndesConfig | None) -> Policy:
    return FCFSPolicy()


@POLICIES.register("andes", "sarathi")
def _sarathi(cfg: AndesConfig | None) -> Policy:
    return SarathiPolicy()


POLICIES.add("andes", "lqsf", lqsf_policy)
POLICIES.add("andes", "andes", AndesPolicy)
POLICIES.add("andes", "andes-dp", andes_dp_policy)

# The built-in names, in registration order.
POLICY_NAMES = POLICIES.names("andes", plugins=False)


def policy_names() -> tuple[str, ...]:
    """The built-ins, then the installed plug-ins."""
    return POLICIES.names("andes")


def make_policy(name: str, **andes_overrides: Any) -> Policy:
    """A fresh policy object (policies keep small per-run state, so never share one)."""
    cfg = AndesConfig.model_validate(andes_overrides) if andes_overrides else None
    policy: Policy = POLICIES.create("andes", name, cfg)
    return policy
