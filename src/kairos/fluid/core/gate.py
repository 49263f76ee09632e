"""Whether packing or scaling can pay, decided before anything is spent on them.

Profiling costs wall time that the one-trial-per-GPU baseline never pays (the packing and
scaling series, 40-130 s on the presets), and it buys nothing when the plan cannot use what it
measures. Packing pays only while more trials are live than there are GPUs; scaling pays only
while a GPU would otherwise sit idle. A tuner that keeps a fixed number `K` of trials live,
refilling the group as trials leave (ASHA, BOHB, PBT, an Optuna study), says so through
`steady_live`, and the gate reads it:

- `K == n_gpus`: every live trial holds one GPU, nobody queues and no GPU is spare, so Fluid's
  plan is the baseline's. Fluid runs the baseline schedule and profiles nothing. What it gives
  up is the drain at the very end, when the tuner has run out of configurations and the group
  shrinks (a time-to-target run usually stops before it).
- `K > n_gpus`: trials queue, so packing can pay; a GPU is never spare until the drain, so only
  the packing series is profiled.
- `K < n_gpus`: `n - K` GPUs are spare all along, so scaling can pay; nothing ever queues, so
  only the scaling series is profiled.

A tuner without `steady_live` (grid, SHA, HyperBand, SyncBOHB: groups whose size changes rung
by rung, and stragglers that leave GPUs idle) needs both series.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Needs:
    """Which of Fluid's mechanisms the plan can use, hence which series to profile."""

    packing: bool
    scaling: bool

    @property
    def anything(self) -> bool:
        return self.packing or self.scaling


def steady_live(tuner: object) -> int | None:
    """The number of trials the tuner keeps live at once, if it keeps a fixed number: its
    optional `steady_live` attribute (absent or None: the group size varies)."""
    k = getattr(tuner, "steady_live", None)
    if k is None:
        return None
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"a tuner's steady_live must be a positive int or None, got {k!r}")
    return k


def what_can_pay(n_gpus: int, live: int | None) -> Needs:
    """The rule of the module docstring for `live` steady trials on `n_gpus` GPUs."""
    if n_gpus < 1:
        raise ValueError(f"need at least one GPU, got {n_gpus}")
    if live is None:
        return Needs(packing=True, scaling=True)
    return Needs(packing=live > n_gpus, scaling=live < n_gpus)
