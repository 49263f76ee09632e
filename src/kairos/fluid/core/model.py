"""Trials as moldable rectangles: how long a trial takes at a given width (Eq. 3.2).

A width below one is a packing slot (the trial shares a GPU with others, `1/c` of it); a width
of one or more is a data-parallel gang of whole GPUs. Widths are `Fraction`s so that `1/c`
slots add up exactly (three slots of 1/3 are one GPU, not 0.9999999999999999).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

Width = Fraction


def height(h1: float, width: Width, alpha: float = 1.0, beta: float = 1.0) -> float:
    """Remaining runtime of a trial whose remaining runtime on exactly one GPU is `h1`, at
    `width` (Eq. 3.2): packing slows it by `alpha^(1/w - 1)`, data parallelism divides it by
    `w` and charges `beta^(w - 1)` for communication."""
    if width <= 0:
        raise ValueError(f"a width must be positive, got {width}")
    if width < 1:
        return h1 * alpha ** (float(1 / width) - 1.0)
    w = float(width)
    return h1 / w * beta ** (w - 1.0)


@dataclass(frozen=True)
class PlanTrial:
    """What a planner knows of one trial: its remaining work on one GPU (`h1` =
    remaining iterations x per-iteration time at width 1) and its overhead coefficients."""

    trial_id: str
    h1: float
    alpha: float = 1.0
    beta: float = 1.0

    def at(self, width: Width) -> float:
        return height(self.h1, width, self.alpha, self.beta)


@dataclass(frozen=True)
class Limits:
    """The session's packing limit `c` (trials per shared GPU) and scaling limit `d` (GPUs per
    trial); `c = 1` disables packing and `d = 1` disables scaling."""

    c: int = 1
    d: int = 1

    def __post_init__(self) -> None:
        if self.c < 1 or self.d < 1:
            raise ValueError(f"c and d must be at least 1, got c={self.c}, d={self.d}")

    @property
    def slot(self) -> Width:
        return Fraction(1, self.c)


def water_fill(h1: float, total: float, n: int, limits: Limits) -> Width:
    """The realizable share of `n` GPUs for work `h1` out of `total` (Algorithm 3.1's line):
    `floor(n h1 / S)` whole GPUs capped at `d`, or one `1/c` slot when that floor is zero."""
    share = n * h1 / total if total > 0 else 0.0
    whole = int(share + 1e-9)  # n h1 / S == 1 exactly must not floor to 0 by rounding
    if whole < 1:
        return limits.slot
    return Fraction(min(whole, limits.d))
