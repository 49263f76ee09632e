"""The pending requests of Algorithm 4.1: one scored queue Q_bs per batch size.

Q_bs holds the requests for which a batch of size bs can still meet their deadline. Viable
sets are nested (Q_1 ⊇ Q_2 ⊇ …) because the drop estimate never decreases with bs, so a
request's membership is a prefix S[:m] of the sizes. Each queue keeps
- a priority index over the score lines p = α·e^{b(t − t0)} + β (`hull`),
- per app key, a deadline heap (lazy deletion) for dropping and for its earliest deadline,
- a milestone heap: when a member's (α, β) in this queue next changes (spec 3.5).

A queue's coordinates are read only when it is popped, so its milestones are fired then
(`fire`): dropping and choosing the batch size look at deadlines only, so this is exact, and
a request whose slack crossed several bin edges since is re-scored once.
"""

from __future__ import annotations

import math
from collections import defaultdict
from heapq import heapify, heappop, heappush

import numpy as np

from kairos.orloj.hull import PriorityIndex, make_index
from kairos.orloj.policy import Request
from kairos.orloj.store import DistributionStore

_VECTOR_MIN = 48  # below this many re-scores, numpy's overhead beats the loop it saves


class Pending:
    """A pending request: its cost steps, key, viable prefix length m and next milestones."""

    __slots__ = ("app", "d_drop", "key", "m", "next_ms", "req", "rid", "single", "steps", "tie")

    def __init__(self, req: Request, key: str, steps: list[tuple[float, float]], n: int) -> None:
        self.req, self.rid, self.app, self.key = req, req.request_id, req.app, key
        self.steps = steps
        self.single = len(steps) == 1
        self.d_drop = steps[-1][0]  # feasibility uses the last deadline
        self.tie = steps[0][0]  # ties go to the earlier (first) deadline
        self.m = 0
        self.next_ms = [math.inf] * n


class SizeQueue:
    def __init__(self, kind: str) -> None:
        self.index: PriorityIndex = make_index(kind)
        self.heaps: dict[str, list[tuple[float, int]]] = defaultdict(list)  # (deadline, rid)
        self.milestones: list[tuple[float, int, int]] = []  # (time, seq, rid)


class ScoredQueues:
    def __init__(self, sizes: list[int], index: str, store: DistributionStore, b: float) -> None:
        self.sizes = sizes
        self.store = store
        self.b = b
        self.queues = [SizeQueue(index) for _ in sizes]
        self.entries: dict[int, Pending] = {}
        self.t0 = 0.0  # time base of the coordinates
        self._seq = 0

    def viable(self, e: Pending, t: float) -> int:
        """How many batch sizes (a prefix of S) can still meet e's deadline at time t."""
        m = 0
        for est in self.store.estimates[e.key]:
            if t + est > e.d_drop:
                break
            m += 1
        return m

    def grow(self, e: Pending, m: int, t: float) -> None:
        """Insert e into the queues S[e.m:m]."""
        self.entries[e.rid] = e
        for j in range(e.m, m):
            q = self.queues[j]
            alpha, beta, when = self._coords(e, j, t)
            q.index.insert(e.rid, alpha, beta, e.tie)
            heappush(q.heaps[e.key], (e.d_drop, e.rid))
            self._push(e, j, when)
        e.m = max(e.m, m)

    def shrink(self, e: Pending, m: int) -> None:
        """Keep e in S[:m] only; m = 0 forgets it."""
        for j in range(m, e.m):
            self.queues[j].index.delete(e.rid)
        e.m = min(e.m, m)
        if e.m == 0:
            del self.entries[e.rid]

    def pop(self, j: int, k: int, t: float) -> list[Pending]:
        """PopBatch: the k best of Q_j at time t, removed from every queue."""
        self.fire(j, t)
        x = math.exp(self.b * (t - self.t0))
        out = []
        for rid in self.queues[j].index.pop_top(x, k):
            e = self.entries.pop(rid)
            for jj in range(e.m):
                if jj != j:
                    self.queues[jj].index.delete(rid)
            out.append(e)
        return out

    def earliest(self, j: int) -> tuple[float, str] | None:
        """(D, key) of the earliest-deadline request in Q_j (cleans stale heap tops)."""
        best: tuple[float, str] | None = None
        for key, heap in self.queues[j].heaps.items():
            while heap:
                e = self.entries.get(heap[0][1])
                if e is not None and e.m > j and e.key == key:
                    break
                heappop(heap)
            if heap and (best is None or heap[0][0] < best[0]):
                best = (heap[0][0], key)
        return best

    # -- coordinates and milestones ---------------------------------------------------------
    def _coords(self, e: Pending, j: int, t: float) -> tuple[float, float, float]:
        """(α, β) of e in Q_j at time t (a sum over its cost steps) and when they change."""
        table = self.store.tables[e.key][j]
        alpha = beta = 0.0
        nxt = math.inf
        for d, dc in e.steps:
            st = table.state_at(d, t)
            a, b = table.coords(d - self.t0, st, dc)
            alpha += a
            beta += b
            when = d - table.change_slack[st]
            if when < nxt:
                nxt = when
        return alpha, beta, nxt

    def _push(self, e: Pending, j: int, when: float) -> None:
        e.next_ms[j] = when
        if when < math.inf:
            self._seq += 1
            heappush(self.queues[j].milestones, (when, self._seq, e.rid))

    def _set_ms(self, e: Pending, j: int, when: float) -> None:
        if e.next_ms[j] != when:  # not already the scheduled one
            self._push(e, j, when)

    def fire(self, j: int, t: float) -> None:
        """Re-score the members of Q_j whose state changed since Q_j was last read."""
        heap, entries = self.queues[j].milestones, self.entries
        due = []
        while heap and heap[0][0] <= t:
            when, _, rid = heappop(heap)
            e = entries.get(rid)
            if e is None or e.m <= j or e.next_ms[j] != when:
                continue  # dispatched, dropped from this queue, or superseded
            e.next_ms[j] = math.nan  # a duplicate entry is now stale too
            due.append(e)
        self._rescore(j, due, t)

    def _rescore(self, j: int, entries: list[Pending], t: float) -> None:
        """New (α, β) and next milestone for `entries` of Q_j; one index update. Large
        single-step groups of one app go through numpy, the rest one by one."""
        ids: list[int] = []
        alphas: list[float] = []
        betas: list[float] = []
        groups: dict[str, list[Pending]] = defaultdict(list)
        vector = len(entries) >= _VECTOR_MIN
        for e in entries:
            if vector and e.single:
                groups[e.key].append(e)
                continue
            alpha, beta, when = self._coords(e, j, t)
            ids.append(e.rid)
            alphas.append(alpha)
            betas.append(beta)
            self._set_ms(e, j, when)
        for key, members in groups.items():
            table = self.store.tables[key][j]
            d = np.array([e.steps[0][0] for e in members])
            costs = np.array([e.steps[0][1] for e in members])
            states = table.states_at(d, t)
            a, b = table.coords_many(d - self.t0, states, costs)
            nxt = d - np.asarray(table.change_slack)[states]
            for e, when in zip(members, nxt.tolist(), strict=True):
                self._set_ms(e, j, when)
            ids.extend(e.rid for e in members)
            alphas.extend(a.tolist())
            betas.extend(b.tolist())
        if ids:
            self.queues[j].index.update_many(ids, alphas, betas)

    def rebase(self, t: float) -> None:
        """Move the time base to t and re-score everyone (Algorithm 4.1 lines 2-4): every α
        changes by the same factor, so no ranking does."""
        self.t0 = t
        self.refresh(t)

    def refresh(self, t: float, structural: bool = False) -> None:
        """Re-score every pending request; `structural` after the tables were rebuilt: keys,
        viable sets, deadline heaps and milestones are recomputed too."""
        if structural:
            for q in self.queues:
                q.milestones = []
            for e in self.entries.values():
                e.next_ms = [math.nan] * len(self.sizes)  # every milestone is re-pushed
                e.key = self.store.key(e.app)
                m = self.viable(e, t)
                if m > e.m:  # a smaller estimate widens the viable set; the drop step narrows
                    self.grow(e, m, t)
            for j, q in enumerate(self.queues):
                q.heaps = defaultdict(list)
                for e in self.entries.values():
                    if e.m > j:
                        q.heaps[e.key].append((e.d_drop, e.rid))
                for heap in q.heaps.values():
                    heapify(heap)
        for j in range(len(self.sizes)):
            self._rescore(j, [e for e in self.entries.values() if e.m > j], t)
        if structural:
            for q in self.queues:
                heapify(q.milestones)

    def check(self) -> None:
        """Nested viable sets and index contents agree with every entry (raises if not)."""
        for j, q in enumerate(self.queues):
            inside = {rid for rid, e in self.entries.items() if e.m > j}
            if len(q.index) != len(inside) or any(rid not in q.index for rid in inside):
                raise AssertionError(f"queue of batch size {self.sizes[j]} is out of sync")
        for e in self.entries.values():
            if not 1 <= e.m <= len(self.sizes):
                raise AssertionError(f"request {e.rid} pending with no viable batch size")
