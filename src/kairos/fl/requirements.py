"""Eligibility requirements and the Venn-diagram atoms they cut a population into.

A job's requirement is a predicate on device attributes (minimum CPU score, RAM, accelerator
memory, OS version). Given an ordered list of requirements, a device's *signature* is the bitmask
of the requirements it meets (bit i for requirement i). Devices with the same signature are
interchangeable for every job, so schedulers reason about signatures (atoms), never devices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.fl.devices import DevicePopulation


class Requirement(BaseModel):
    """Minimum device attributes a job needs; equal requirements define one job group."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    min_cpu_ghz: float = Field(0.0, ge=0)
    min_ram_gb: float = Field(0.0, ge=0)
    min_fp16_mem_mb: float = Field(0.0, ge=0)
    min_android_os: float = Field(0.0, ge=0)

    def mask(self, pop: DevicePopulation) -> np.ndarray:
        """Which devices of the population meet the requirement (vectorised)."""
        return (
            (pop.cpu_ghz >= self.min_cpu_ghz)
            & (pop.ram_gb >= self.min_ram_gb)
            & (pop.fp16_mem_mb >= self.min_fp16_mem_mb)
            & (pop.android_os >= self.min_android_os)
        )

    def admits(self, attrs: Mapping[str, float]) -> bool:
        """Whether one device (attributes as it reports them at check-in) is eligible.

        A missing attribute counts as 0, so a device that does not report its RAM is not
        eligible for a job that needs RAM; it stays eligible for jobs that do not ask.
        """
        return (
            attrs.get("cpu_ghz", 0.0) >= self.min_cpu_ghz
            and attrs.get("ram_gb", 0.0) >= self.min_ram_gb
            and attrs.get("fp16_mem_mb", 0.0) >= self.min_fp16_mem_mb
            and attrs.get("android_os", 0.0) >= self.min_android_os
        )


class MemberRequirement(Requirement):
    """Thresholds AND membership: only devices whose private integer `cohort_code` is
    `cohort_residue` modulo `cohort_modulus` (Auxo's cohorts as jobs: a cohort's members are
    the devices whose cohort digits start with its path). The code stays on the device like
    its attributes. `cohort_known` in the attributes says the code is known only modulo that
    number (what accepting a membership offer proves), which implies membership only through a
    multiple of this modulus."""

    cohort_modulus: int = Field(ge=2)
    cohort_residue: int = Field(ge=0)

    def admits(self, attrs: Mapping[str, float]) -> bool:
        code = int(attrs.get("cohort_code", -1))
        known = int(attrs.get("cohort_known", 0))
        if code < 0 or (known and known % self.cohort_modulus):
            return False
        return super().admits(attrs) and code % self.cohort_modulus == self.cohort_residue


MEMBERSHIP = ("cohort_modulus", "cohort_residue")


def requirement_from(name: str, thresholds: Mapping[str, float]) -> Requirement:
    """A requirement from its thresholds as a service stores, offers and logs them: the four
    minima, and membership when `cohort_modulus` is above 1."""
    values = {k: v for k, v in thresholds.items() if k not in MEMBERSHIP}
    modulus = int(thresholds.get("cohort_modulus", 1))
    if modulus > 1:
        residue = int(thresholds.get("cohort_residue", 0))
        return MemberRequirement(
            name=name, cohort_modulus=modulus, cohort_residue=residue, **values
        )
    return Requirement(name=name, **values)


def signatures(pop: DevicePopulation, requirements: Sequence[Requirement]) -> np.ndarray:
    """Each device's signature: bit i set iff it meets `requirements[i]` (int64, so <= 63)."""
    if len(requirements) > 63:
        raise ValueError("at most 63 requirements fit in an int64 signature")
    sig = np.zeros(len(pop), dtype=np.int64)
    for i, req in enumerate(requirements):
        sig |= req.mask(pop).astype(np.int64) << i
    return sig


def signature_of(attrs: Mapping[str, float], requirements: Sequence[Requirement]) -> int:
    """One device's signature from its reported attributes (the service's check-in path)."""
    return sum(1 << i for i, req in enumerate(requirements) if req.admits(attrs))


def atom_shares(sigs: np.ndarray) -> dict[int, float]:
    """Share of devices per signature (atom), for reports and sanity checks."""
    values, counts = np.unique(sigs, return_counts=True)
    total = max(int(counts.sum()), 1)
    return {int(v): float(c) / total for v, c in zip(values, counts, strict=True)}
