"""DynamicFluid (Algorithm 3.2): re-spreading a group's tail over the GPUs freed under it.

Run when resources are freed and the group has nothing queued. Widths are recomputed with the
remaining work over every GPU the group holds plus the idle ones, and a running trial's width
changes only when that does not hurt: a scale-up must finish sooner even after paying the
resize cost `eps`, a scale-down must shrink the trial's GPU time (its area).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kairos.fluid.core.model import Limits, PlanTrial, Width, water_fill
from kairos.fluid.core.static import by_work


@dataclass(frozen=True)
class Resize:
    trial_id: str
    old: Width
    new: Width


def scale_up_pays(t: PlanTrial, old: Width, new: Width, eps: float) -> bool:
    return t.at(new) + eps < t.at(old)


def scale_down_pays(t: PlanTrial, old: Width, new: Width, eps: float) -> bool:
    return float(new) * (t.at(new) + eps) < float(old) * t.at(old)


def dynamic_fluid(
    running: Sequence[PlanTrial],
    widths: Mapping[str, Width],
    n_idle: int,
    limits: Limits,
    eps: float,
) -> list[Resize]:
    """The resizes to apply, scale-downs first (they free capacity), then scale-ups in
    longest-work order while free capacity allows; a scale-up that cannot get its full width
    takes the largest integer width in between for which the test still passes.

    `widths` are the trials' current widths; `n_idle` the idle GPUs the group may take.
    Capacity is counted in GPUs: a trial's slot frees nothing until the trial leaves its GPU.
    """
    held = sum((widths[t.trial_id] for t in running), Fraction(0))
    n_total = int(held) + n_idle
    ordered = by_work(running)
    total = sum(t.h1 for t in ordered)
    downs: list[Resize] = []
    ups: list[tuple[PlanTrial, Width, Width]] = []
    for t in ordered:
        old = widths[t.trial_id]
        new = water_fill(t.h1, total, n_total, limits)
        if new > old and scale_up_pays(t, old, new, eps):
            ups.append((t, old, new))
        elif new < old and scale_down_pays(t, old, new, eps):
            downs.append(Resize(t.trial_id, old, new))
    free = Fraction(n_idle) + sum((_freed(r.old, r.new) for r in downs), Fraction(0))
    out = list(downs)
    for t, old, new in ups:
        granted = _grant(t, old, new, free, eps)
        if granted is not None:
            out.append(Resize(t.trial_id, old, granted))
            free -= _taken(old, granted)
    return out


def _taken(old: Width, new: Width) -> Fraction:
    """Whole GPUs a scale-up needs beyond the trial's own: a slot (<1) gives back nothing,
    since its shared GPU stays busy with the others."""
    return new - (old if old >= 1 else 0)


def _freed(old: Width, new: Width) -> Fraction:
    """Whole GPUs a scale-down returns (only whole GPUs can be given to others)."""
    if old < 1:
        return Fraction(0)
    return old - new if new >= 1 else old - 1  # into a slot: it keeps one GPU for packing


def _grant(t: PlanTrial, old: Width, new: Width, free: Fraction, eps: float) -> Width | None:
    if _taken(old, new) <= free:
        return new
    lowest = int(old) + 1 if old >= 1 else 1
    for w in range(int(new) - 1, lowest - 1, -1):
        cand = Fraction(w)
        if _taken(old, cand) <= free and scale_up_pays(t, old, cand, eps):
            return cand
    return None
