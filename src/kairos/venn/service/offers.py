"""Job offers, and what accepting one proves about a device.

Job offers keep devices' attributes private. A check-in carries only an opaque device id and
gets the *public* requirements of the jobs that want devices now (strictest first). The device
tests them locally and accepts one it meets. Accepting offer R proves the device meets R and
every requirement R implies (each threshold of R at least as high), so the service hands the
manager that set of requirements as the device's atom: a lower bound of its true atom, never a
wrong one, so the manager never assigns a device to a job it cannot serve.

An offer id is `<job id>.r<round>`: stateless, so offers outlive a restart.
"""

from __future__ import annotations

from collections.abc import Mapping

from kairos.fl.requirements import Requirement
from kairos.venn.manager import ResourceManager

THRESHOLDS = ("min_cpu_ghz", "min_ram_gb", "min_fp16_mem_mb", "min_android_os")


def requirement_of(thresholds: Mapping[str, float]) -> Requirement:
    """Equal thresholds make equal requirements (one group), whatever the jobs' names."""
    values = {k: float(thresholds.get(k, 0.0)) for k in THRESHOLDS}
    name = ",".join(f"{k[4:]}>={v:g}" for k, v in values.items() if v > 0) or "any"
    return Requirement(name=name, **values)


def accepted_atom(manager: ResourceManager, thresholds: Mapping[str, float]) -> int:
    """The atom of a device that accepted an offer with these thresholds: it met them, so it
    is eligible wherever a device with exactly those attributes would be."""
    return manager.signature({k.removeprefix("min_"): v for k, v in thresholds.items()})


def offer_id(job_id: str, round_idx: int) -> str:
    return f"{job_id}.r{round_idx}"
