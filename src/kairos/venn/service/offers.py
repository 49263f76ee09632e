"""Job offers, and what accepting one proves about a device.

Job offers keep devices' attributes private. A check-in carries only an opaque device id and
gets the *public* requirements of the jobs that want devices now (strictest first). The device
tests them locally and accepts one it meets. Accepting offer R proves the device meets R and
every requirement R implies (each threshold of R at least as high), so the service hands the
manager that set of requirements as the device's atom: a lower bound of its true atom, never a
wrong one, so the manager never assigns a device to a job it cannot serve.

A requirement may also ask for membership: `cohort_modulus` m > 1 and `cohort_residue` r
admit only devices whose private integer `cohort_code` is r modulo m (Auxo's cohorts: the
devices whose cohort digits start with the cohort's path, `kairos.auxo.venn_service_jobs`).
The code stays on the device like its attributes; accepting such an offer proves the code's
residue modulo m, so the atom holds exactly the memberships that residue implies.

An offer id is `<job id>.r<round>`: stateless, so offers outlive a restart.
"""

from __future__ import annotations

from collections.abc import Mapping

from kairos.fl.requirements import MEMBERSHIP, Requirement, requirement_from
from kairos.venn.manager import ResourceManager

THRESHOLDS = ("min_cpu_ghz", "min_ram_gb", "min_fp16_mem_mb", "min_android_os")


def public_requirement(raw: Mapping[str, float]) -> dict[str, float]:
    """A job's requirement as stored and offered: the four thresholds, and the membership
    keys only when it asks for membership (so a plain job's requirement is unchanged)."""
    out = {k: float(raw.get(k, 0.0)) for k in THRESHOLDS}
    if float(raw.get("cohort_modulus", 1.0)) > 1:
        out.update({k: float(raw.get(k, 0.0)) for k in MEMBERSHIP})
    return out


def requirement_of(thresholds: Mapping[str, float]) -> Requirement:
    """Equal thresholds (and membership) make equal requirements (one group), whatever the
    jobs' names."""
    values = {k: float(thresholds.get(k, 0.0)) for k in THRESHOLDS}
    name = ",".join(f"{k[4:]}>={v:g}" for k, v in values.items() if v > 0) or "any"
    m = int(thresholds.get("cohort_modulus", 1))
    if m > 1:
        r = int(thresholds.get("cohort_residue", 0))
        name += f",code%{m}={r}"
        values |= {"cohort_modulus": m, "cohort_residue": r}
    return requirement_from(name, values)


def accepted_atom(manager: ResourceManager, thresholds: Mapping[str, float]) -> int:
    """The atom of a device that accepted an offer with these thresholds: it met them, so it
    is eligible wherever a device with exactly those attributes would be (and, for a
    membership offer, wherever its code's residue modulo `cohort_modulus` admits it)."""
    attrs = {k.removeprefix("min_"): float(thresholds.get(k, 0.0)) for k in THRESHOLDS}
    m = int(thresholds.get("cohort_modulus", 1))
    if m > 1:
        attrs |= {"cohort_code": float(thresholds["cohort_residue"]), "cohort_known": float(m)}
    return manager.signature(attrs)


def offer_id(job_id: str, round_idx: int) -> str:
    return f"{job_id}.r{round_idx}"
