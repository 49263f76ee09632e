"""Mapping widths to devices: exclusive GPUs and gangs for whole widths, `1/c` slots on shared
GPUs for fractional ones, and a queue with backfill for what does not fit yet.

A GPU is free, exclusive (one trial or one gang member) or shared with exactly `c` slots.
Fractional trials go to the most idle device first (Appendix B, Lemma 2): a free GPU while any
is left, and only then a slot on the shared GPU with the fewest occupants (earliest expected
end breaking ties). So 9 equal half-GPU trials on 8 GPUs run on all 8, not 5 busy and 3 idle
that nothing would ever reclaim.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from kairos.fluid.core.model import Width


@dataclass(frozen=True)
class Placement:
    trial_id: str
    width: Width
    gpus: tuple[int, ...]  # one GPU for a slot, `width` GPUs for a gang


@dataclass
class _Gpu:
    exclusive: str | None = None
    slots: dict[str, float] = field(default_factory=dict)  # trial -> expected end

    @property
    def free(self) -> bool:
        return self.exclusive is None and not self.slots


class Placer:
    """The devices of one driver and who holds them."""

    def __init__(self, n: int, c: int) -> None:
        if n < 0 or c < 1:
            raise ValueError(f"need n >= 0 GPUs and c >= 1 slots, got n={n}, c={c}")
        self.c = c
        self.gpus = [_Gpu() for _ in range(n)]
        self.placed: dict[str, Placement] = {}

    @property
    def n(self) -> int:
        return len(self.gpus)

    def idle(self) -> int:
        """Fully free GPUs."""
        return sum(g.free for g in self.gpus)

    def fits(self, width: Width) -> bool:
        if width >= 1:
            return self.idle() >= width
        return self.idle() > 0 or any(self._open_slot(g) for g in self.gpus)

    def place(self, trial_id: str, width: Width, expected_end: float = 0.0) -> Placement | None:
        """Put the trial on devices, or return None (and change nothing) if it does not fit."""
        if trial_id in self.placed:
            raise ValueError(f"trial {trial_id} is already placed")
        if width >= 1:
            if width.denominator != 1:
                raise ValueError(f"a gang needs a whole number of GPUs, got {width}")
            free = [i for i, g in enumerate(self.gpus) if g.free]
            if len(free) < width:
                return None
            chosen = tuple(free[: int(width)])
            for i in chosen:
                self.gpus[i].exclusive = trial_id
        else:
            if width != Fraction(1, self.c):
                raise ValueError(f"a fractional width must be the slot 1/{self.c}, got {width}")
            slot = self._most_idle()
            if slot is None:
                return None
            self.gpus[slot].slots[trial_id] = expected_end
            chosen = (slot,)
        placement = Placement(trial_id, width, chosen)
        self.placed[trial_id] = placement
        return placement

    def release(self, trial_id: str) -> Placement:
        placement = self.placed.pop(trial_id)
        for i in placement.gpus:
            gpu = self.gpus[i]
            if gpu.exclusive == trial_id:
                gpu.exclusive = None
            gpu.slots.pop(trial_id, None)
        return placement

    def _open_slot(self, gpu: _Gpu) -> bool:
        return gpu.exclusive is None and 0 < len(gpu.slots) < self.c

    def _most_idle(self) -> int | None:
        for i, g in enumerate(self.gpus):
            if g.free:
                return i
        shared = [i for i, g in enumerate(self.gpus) if self._open_slot(g)]
        if not shared:
            return None
        return min(
            shared, key=lambda i: (len(self.gpus[i].slots), min(self.gpus[i].slots.values()), i)
        )


@dataclass(frozen=True)
class Waiting:
    """A trial in the queue: ordered by its group's arrival, then longest work first."""

    group_order: int
    h1: float
    trial_id: str
    width: Width

    def key(self) -> tuple[int, float, str]:
        return (self.group_order, -self.h1, self.trial_id)


def start_queued(
    placer: Placer, queue: Iterable[Waiting], backfill: bool = True, now: float = 0.0
) -> list[Placement]:
    """Place queued trials in queue order; with `backfill`, a later trial that fits starts even
    when the head does not (Lemma 1 lets small trials take any idle resource)."""
    started = []
    for w in sorted(queue, key=Waiting.key):
        placement = placer.place(w.trial_id, w.width, now + w.h1)
        if placement is not None:
            started.append(placement)
        elif not backfill:
            break
    return started
