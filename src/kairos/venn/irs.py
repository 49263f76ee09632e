"""Intersection Resource Scheduling (IRS, Algorithm 3, spec §3.3-3.5).

Step 1 orders each job group by remaining demand, smallest first (SRPT inside a group, where
all jobs compete for exactly the same devices). Step 2 decides who owns the atoms that several
groups can use: first every atom goes to the scarcest group that can use it (a disjoint
allocation), then, from the most abundant group down, a group takes a scarcer group's share
when it has more affected jobs per unit of allocated supply (Lemma 3's exchange argument:
`m'_j/|S'_j| > m'_k/|S'_k|`). Everything works on atoms and rates, never on single devices, so a
plan costs `max(O(m log m), O(n^2))` for m jobs and n groups.

Resolutions of the printed algorithm (spec §3.4): the loop of line 1 covers line 2 only; line 12
divides by the *current* allocation |S'_k|; a group takes only `S'_k ∩ S_j` (atoms it can use).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kairos.venn.view import RequestView

QueueLenMode = Literal["affected", "group"]
IntraKey = Literal["remaining", "total"]
# what line 12's affected-queue estimate counts per queued job: its key (remaining demand), or
# (`request`, the artifact's `irs.py:13`) the request's full size, fixed when it was queued
AffectedKey = Literal["key", "request"]
# groups without a request: left out (kairos), or (`artifact`) given their atoms in the
# scarcest-first allocation like any group, so only a more abundant group that reaches them in
# line 12's loop takes them over (`irs.py:78-107`); atoms nobody takes stay unused
IdleGroups = Literal["skip", "artifact"]
# what a group takes over from a scarcer group: the atoms it can use (kairos), or (`whole`) the
# scarcer group's whole share, as the artifact does (`irs.py:106-107, 116-118`), whose
# `VennReqScheduler` then hands those devices to the taker's jobs without an eligibility check
# (`irs.py:136-140`, `venn.py:262-277`; its client accepts any task, `venn_client.py:8-20`)
Takeover = Literal["usable", "whole"]


def intra_key(req: RequestView, mode: IntraKey = "remaining") -> float:
    """Remaining demand: the current request's undispatched devices, or (`total`, when the job
    tells its rounds) everything it still needs: `remaining_rounds * D + remaining`."""
    if mode == "total" and req.rounds is not None:
        return float(max(req.rounds - req.round_idx - 1, 0) * req.demand + req.remaining)
    return float(req.remaining)


def intra_order(
    reqs: Sequence[RequestView], key: Callable[[RequestView], float]
) -> list[RequestView]:
    """Smallest key first; ties by earlier arrival, then job id (deterministic)."""
    return sorted(reqs, key=lambda r: (key(r), r.arrival, r.job_id))


def affected_len(pj: Sequence[tuple[float, float]], pk: Sequence[tuple[float, float]]) -> int:
    """m'_j: how many of j's jobs finish before k's queue drains, if j is prioritised.

    Each entry is (remaining demand, planned rate) in intra-group order; a job with rate 0
    never finishes and is skipped, as are entries of k with rate 0.
    """
    dj = sum(d / x for d, x in pj if x > 0)
    dk = sum(d / x for d, x in pk if x > 0)
    if dj <= dk:
        return len(pj)
    acc = 0.0
    for i, (d, x) in enumerate(pj):
        if x <= 0:
            continue
        acc += d / x
        if acc >= dk:
            return i
    return len(pj)


@dataclass(frozen=True)
class IRSPlan:
    owner: dict[int, int]  # atom -> group
    order: dict[int, list[RequestView]]  # group -> requests, in service order
    alloc_rate: dict[int, float]  # group -> rate of the atoms it owns
    size: dict[int, float]  # group -> |S_g|, its whole eligible rate


def irs_plan(
    groups: Mapping[int, Sequence[RequestView]],
    rates: Mapping[int, float],
    keys: Mapping[int, float] | None = None,
    queue_len_mode: QueueLenMode = "affected",
    group_factor: Mapping[int, float] | None = None,
    stop_at_refusal: bool = True,
    affected_key: AffectedKey = "key",
    idle_groups: IdleGroups = "skip",
    n_groups: int = 0,
    takeover: Takeover = "usable",
) -> IRSPlan:
    """Algorithm 3. `keys` (request id -> sort key; default: remaining demand) order jobs
    inside a group, and fairness may rescale them; `group_factor` scales each group's queue
    length (the fairness knob across groups). `affected_key` and `idle_groups` (with the
    number of groups, `n_groups`) and `takeover` select the artifact's readings (see their
    types). With `takeover="whole"` a group may own atoms it cannot use, and line 12 compares
    every scarcer group in abundance order, as the artifact's loop does (`irs.py:103`)."""
    active = sorted(g for g, reqs in groups.items() if reqs)
    idle = sorted(set(range(n_groups)) - set(active)) if idle_groups == "artifact" else []
    gs = sorted([*active, *idle])
    groups = {**{g: [] for g in idle}, **groups}
    factor = {g: (group_factor or {}).get(g, 1.0) for g in gs}
    if keys is None:
        keys = {r.request_id: float(r.remaining) for g in gs for r in groups[g]}
    kv = keys
    order = {g: intra_order(groups[g], lambda r: kv[r.request_id]) for g in gs}
    positive = [a for a, r in rates.items() if r > 0]
    elig = {g: frozenset(a for a in positive if a >> g & 1) for g in gs}
    size = {g: sum(rates[a] for a in elig[g]) for g in gs}

    def rate(atoms: frozenset[int] | set[int]) -> float:
        return sum(rates[a] for a in atoms)

    free: set[int] = set().union(*elig.values()) if gs else set()
    alloc: dict[int, set[int]] = {}
    for g in sorted(gs, key=lambda g: (size[g], g)):
        alloc[g] = set(elig[g] & free)
        free -= alloc[g]
    ar = {g: rate(alloc[g]) for g in gs}
    q = {g: len(order[g]) * factor[g] for g in gs}
    qkey = {r.request_id: _affected(r, kv, affected_key) for g in gs for r in order[g]}
    plan_q = {g: [(qkey[r.request_id], ar[g]) for r in order[g]] for g in gs}
    if affected_key == "request":  # the artifact's group queue is a heap on that size
        plan_q = {g: sorted(q_g) for g, q_g in plan_q.items()}
    by_abundance = sorted(gs, key=lambda g: (-size[g], g))
    whole = takeover == "whole"
    for i, j in enumerate(by_abundance):
        if ar[j] <= 0 or not order[j]:
            continue
        for k in by_abundance[i + 1 :] if whole else by_abundance:
            if not whole and not (size[k] < size[j] and elig[k] & elig[j]):
                continue
            take = set(alloc[k]) if whole else alloc[k] & elig[j]
            r_take = rate(take)
            if r_take <= 0 or ar[k] <= 0:
                continue
            if not order[k]:  # an idle group (artifact mode): its atoms pass on unasked
                alloc[j] |= take
                alloc[k] -= take
                ar[j] += r_take
                ar[k] -= r_take
                plan_q[j] = [(d, x + r_take) for d, x in plan_q[j]]
                continue
            if queue_len_mode == "affected":
                m_j = affected_len(plan_q[j], plan_q[k]) * factor[j]
            else:
                m_j = q[j]
            if m_j / ar[j] > q[k] / ar[k]:
                alloc[j] |= take
                alloc[k] -= take
                ar[j] += r_take
                ar[k] -= r_take
                q[j] += q[k]
                plan_q[j] = [(d, x + r_take) for d, x in plan_q[j]] + plan_q[k]
            elif stop_at_refusal:
                break
    owner = {a: g for g in gs for a in alloc[g] if order[g]}
    return IRSPlan(owner=owner, order=order, alloc_rate=ar, size=size)


def _affected(r: RequestView, keys: Mapping[int, float], mode: AffectedKey) -> float:
    return float(r.demand) if mode == "request" else keys[r.request_id]
