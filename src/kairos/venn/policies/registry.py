"""Policies by name, so configs and the command line can pick one with a string."""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos.venn.matching import MatcherConfig, TierMatcher
from kairos.venn.policies.base import DevicePolicy
from kairos.venn.policies.fifo import FIFOPolicy
from kairos.venn.policies.las import LASPolicy
from kairos.venn.policies.random_match import RandomPolicy, RandomPurePolicy
from kairos.venn.policies.srsf import SRSFPolicy
from kairos.venn.policies.venn import VennConfig, VennPolicy

POLICIES = (
    "random",
    "random-pure",
    "random-job",
    "random-client",
    "fifo",
    "srsf",
    "las",
    "venn",
    "venn-nomatch",
    "venn-nosched",
)


def make_policy(name: str, rng: np.random.Generator | None = None, **venn: Any) -> DevicePolicy:
    """A fresh policy. `venn` options (VennConfig fields) apply to the Venn variants; for
    "venn-nosched" only the matcher's fields (tiers, tail_q, ...) are used."""
    rng = rng if rng is not None else np.random.default_rng(0)
    if name == "random":
        return RandomPolicy(rng)
    if name == "random-pure":
        return RandomPurePolicy("uniform", rng)
    if name == "random-job":
        return RandomPurePolicy("demand", rng)
    if name == "random-client":
        return RandomPurePolicy("client", rng)
    if name == "fifo":
        return FIFOPolicy(rng=rng)
    if name == "srsf":
        return SRSFPolicy(rng=rng)
    if name == "las":
        return LASPolicy(rng=rng)
    if name == "venn":
        return VennPolicy(VennConfig(**venn), rng)
    if name == "venn-nomatch":
        return VennPolicy(VennConfig(**{**venn, "matching": False}), rng)
    if name == "venn-nosched":
        cfg = VennConfig(**venn)
        matcher = cfg.matcher() or TierMatcher(MatcherConfig(tiers=cfg.tiers))
        policy = FIFOPolicy(matcher=matcher, rng=rng)
        policy.name = "venn-nosched"
        return policy
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
