"""Venn policies by name, so configs and the command line can pick one with a string.

The built-ins are registered in the shared registry (`kairos.registry.POLICIES`) under
("venn", name); a plug-in (entry point `venn.NAME` in `kairos.policies`) is a factory called
like them: `factory(rng, **venn)`, with the run's generator and the Venn options given. The
non-Venn built-ins take no options and ignore them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos.registry import POLICIES as REGISTRY
from kairos.venn.matching import MatcherConfig, TierMatcher
from kairos.venn.policies.fifo import FIFOPolicy
from kairos.venn.policies.las import LASPolicy
from kairos.venn.policies.random_match import RandomPolicy, RandomPurePolicy
from kairos.venn.policies.srsf import SRSFPolicy
from kairos.venn.policies.venn import VennConfig, VennPolicy
from kairos.venn.policy import DevicePolicy

Rng = np.random.Generator


@REGISTRY.register("venn", "random")
def _random(rng: Rng, **venn: Any) -> DevicePolicy:
    return RandomPolicy(rng)


@REGISTRY.register("venn", "random-pure")
def _random_pure(rng: Rng, **venn: Any) -> DevicePolicy:
    return RandomPurePolicy("uniform", rng)


@REGISTRY.register("venn", "random-job")
def _random_job(rng: Rng, **venn: Any) -> DevicePolicy:
    return RandomPurePolicy("demand", rng)


@REGISTRY.register("venn", "random-client")
def _random_client(rng: Rng, **venn: Any) -> DevicePolicy:
    return RandomPurePolicy("client", rng)


@REGISTRY.register("venn", "fifo")
def _fifo(rng: Rng, **venn: Any) -> DevicePolicy:
    return FIFOPolicy(rng=rng)


@REGISTRY.register("venn", "srsf")
def _srsf(rng: Rng, **venn: Any) -> DevicePolicy:
    return SRSFPolicy(rng=rng)


@REGISTRY.register("venn", "las")
def _las(rng: Rng, **venn: Any) -> DevicePolicy:
    return LASPolicy(rng=rng)


@REGISTRY.register("venn", "venn")
def _venn(rng: Rng, **venn: Any) -> DevicePolicy:
    return VennPolicy(VennConfig(**venn), rng)


@REGISTRY.register("venn", "venn-nomatch")
def _venn_nomatch(rng: Rng, **venn: Any) -> DevicePolicy:
    return VennPolicy(VennConfig(**{**venn, "matching": False}), rng)


@REGISTRY.register("venn", "venn-nosched")
def _venn_nosched(rng: Rng, **venn: Any) -> DevicePolicy:
    """Venn's matching over FIFO job order: only the matcher's fields (tiers, tail_q, ...)."""
    cfg = VennConfig(**venn)
    matcher = cfg.matcher() or TierMatcher(MatcherConfig(tiers=cfg.tiers))
    policy = FIFOPolicy(matcher=matcher, rng=rng)
    policy.name = "venn-nosched"
    return policy


# The built-in names, in the order tables and sweeps list them.
POLICIES = REGISTRY.names("venn", plugins=False)


def policy_names() -> tuple[str, ...]:
    """The built-ins, then the installed plug-ins."""
    return REGISTRY.names("venn")


def make_policy(name: str, rng: np.random.Generator | None = None, **venn: Any) -> DevicePolicy:
    """A fresh policy. `venn` options (VennConfig fields) apply to the Venn variants; for
    "venn-nosched" only the matcher's fields (tiers, tail_q, ...) are used."""
    rng = rng if rng is not None else np.random.default_rng(0)
    policy: DevicePolicy = REGISTRY.create("venn", name, rng, **venn)
    return policy
