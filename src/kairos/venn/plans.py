"""What a Venn policy decides: for a device of each atom, which requests to try, in order.

A `Plan` is computed on triggers (a request arrives, is fully dispatched, closes; a job
finishes; every `replan_period`) and then serves every check-in until the next trigger, so the
per-device hot path is a lookup and a short scan: the manager walks `plan.candidates(atom)` and
gives the device to the first request that still needs devices and whose tier (if any) admits
the device's capability. Plans also carry the tier decisions and memos the policy made, which
the manager stores on the requests (the policy itself keeps no state).

- `OrderPlan`: one global priority order (FIFO, SRSF, LAS, optimised Random), filtered per atom.
- `GroupPlan`: Venn's IRS output: the atom's owner group first, then (work-conserving) the other
  eligible groups from the scarcest, each group in its intra-group order.
- `RandomPlan`: a fresh random order of the eligible requests at every check-in (pure random
  matching and the client-/job-driven designs), drawn from the policy's generator.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kairos.venn.view import RequestView, Tier


@dataclass
class Plan:
    """Base: no candidates. Subclasses implement `candidates`."""

    tiers: dict[int, Tier | None] = field(default_factory=dict)  # request id -> decided tier
    memos: dict[int, float] = field(default_factory=dict)  # request id -> value to keep
    info: dict[str, Any] = field(default_factory=dict)  # for reports (owner, alloc rates)

    def candidates(self, atom: int) -> Iterable[int]:
        """Request ids a device of `atom` may go to, best first."""
        return ()

    def heads(self, rates: Mapping[int, float]) -> dict[int, float]:
        """The requests served first for some atom, with the supply rate they head.

        These are the "currently served" requests that tier matching may restrict.
        """
        out: dict[int, float] = {}
        for atom, rate in rates.items():
            for rid in self.candidates(atom):
                out[rid] = out.get(rid, 0.0) + rate
                break
        return out


@dataclass
class OrderPlan(Plan):
    """A global order; a device's candidates are the requests of groups it can serve."""

    order: Sequence[tuple[int, int]] = ()  # (request id, group), best first
    _cache: dict[int, list[int]] = field(default_factory=dict, repr=False)

    def candidates(self, atom: int) -> list[int]:
        hit = self._cache.get(atom)
        if hit is None:
            hit = [rid for rid, g in self.order if atom >> g & 1]
            self._cache[atom] = hit
        return hit


@dataclass
class GroupPlan(Plan):
    """IRS: owner group first; then, if work-conserving, other eligible groups, scarcest first."""

    owner: Mapping[int, int] = field(default_factory=dict)  # atom -> group
    orders: Mapping[int, Sequence[int]] = field(default_factory=dict)  # group -> request ids
    fallback: Sequence[int] = ()  # groups by eligible supply, ascending
    work_conserving: bool = True

    def candidates(self, atom: int) -> Iterator[int]:
        own = self.owner.get(atom)
        if own is not None:
            yield from self.orders.get(own, ())
        if self.work_conserving:
            for g in self.fallback:
                if g != own and atom >> g & 1:
                    yield from self.orders.get(g, ())


@dataclass
class RandomPlan(Plan):
    """Random matching, redrawn per check-in.

    `mode="uniform"`: a uniformly random eligible request with pending demand (Meta's design).
    `mode="demand"`: weighted by undispatched demand at plan time (jobs sample devices, Google).
    `mode="client"`: the device picks uniformly among *all* eligible unfinished jobs, including
    those not asking now, and is wasted if it picks one of those (clients sample jobs, Apple).
    """

    requests: Sequence[RequestView] = ()
    idle_jobs: Mapping[int, int] = field(default_factory=dict)
    mode: str = "uniform"
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    _by_atom: dict[int, tuple[np.ndarray, np.ndarray, int]] = field(
        default_factory=dict, repr=False
    )

    def _eligible(self, atom: int) -> tuple[np.ndarray, np.ndarray, int]:
        hit = self._by_atom.get(atom)
        if hit is None:
            reqs = [r for r in self.requests if atom >> r.group & 1]
            ids = np.array([r.request_id for r in reqs], dtype=np.int64)
            w = np.array([max(r.remaining, 0) for r in reqs], dtype=np.float64)
            idle = sum(n for g, n in self.idle_jobs.items() if atom >> g & 1)
            hit = (ids, w, idle)
            self._by_atom[atom] = hit
        return hit

    def candidates(self, atom: int) -> list[int]:
        ids, w, idle = self._eligible(atom)
        if ids.size == 0:
            return []
        if self.mode == "client":
            pick = int(self.rng.integers(0, ids.size + idle))
            return [int(ids[pick])] if pick < ids.size else []
        if self.mode == "demand" and w.sum() > 0:
            order = self.rng.choice(ids.size, size=ids.size, replace=False, p=w / w.sum())
        else:
            order = self.rng.permutation(ids.size)
        out: list[int] = ids[order].tolist()
        return out

    def heads(self, rates: Mapping[int, float]) -> dict[int, float]:
        return {}  # random matching serves no request first, so nothing is tiered
