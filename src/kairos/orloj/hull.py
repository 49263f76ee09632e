"""Priority indices over lines p(x) = α·x + β: which pending request scores highest at x = e^{bt'}.

The answer is the vertex of the upper convex hull of the points (α, β) first touched by a line
of slope −x (spec 3.5). Two indices give identical answers, both ranking by the total order
(larger fl(α·x + β), then smaller `tie` — the deadline —, then smaller id):

- `BruteForceIndex`: numpy arrays, O(1) insert/delete/update, one vectorised O(n) scan per
  query. The oracle, and quick in practice for a few thousand points.
- `HullIndex`: a kinetic tournament tree (kinetic segment tree) over the lines. Each internal
  node keeps the winner of its subtree at the current x and a certificate: the smallest x at
  which that could change. The dissertation uses Overmars–van Leeuwen (O(log² n) updates,
  O(1) query); in Python its concatenable queues cost more than they save, and the query
  point only grows between time-base resets (t only moves forward), which is exactly what a
  kinetic structure exploits: insert/delete/update are O(log n), a query is O(1) plus the
  certificates that expired since the last one (amortised polylog; a smaller x rebuilds).
  Certificates are conservative by a floating-point error bound, so the tree always agrees
  with a scan that evaluates fl(α·x + β), ties included.

The scheduler's default is the scan. The spec says: a vectorised scan first, the hull if the
benchmark calls for it; bench_orloj does not. In Python each tree update costs more than numpy
saves, and Orloj's milestones update many lines per decision, so a whole `next_batch` took
0.33/0.61/5.9 ms with the hull against 0.31/0.47/3.6 ms with the scan at 100/1,000/10,000
pending (this machine). The hull stays for Fig 4.12 and as the scan's cross-check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

INF = math.inf
_EPS = 4.0 * 2.0**-53  # twice the error bound of comparing two fl(α·x + β)
_SHRINK = 1.0 - 2.0**-48  # certificates move earlier by this factor (rounding of −v/u)


class PriorityIndex(Protocol):
    def insert(self, item: int, alpha: float, beta: float, tie: float = 0.0) -> None: ...
    def delete(self, item: int) -> None: ...
    def update(self, item: int, alpha: float, beta: float) -> None: ...
    def update_many(
        self, items: Sequence[int], alphas: Sequence[float], betas: Sequence[float]
    ) -> None: ...
    def argmax(self, x: float) -> int: ...
    def pop_top(self, x: float, k: int) -> list[int]: ...
    def __len__(self) -> int: ...
    def __contains__(self, item: object) -> bool: ...


def _check(alpha: float, beta: float) -> None:
    if not (math.isfinite(alpha) and math.isfinite(beta)):
        raise ValueError(f"index coordinates must be finite, got ({alpha}, {beta})")


def _check_x(x: float) -> None:
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"query point x = e^(b t') must be positive and finite, got {x}")


class BruteForceIndex:
    """Parallel numpy arrays; a delete moves the last point into the hole."""

    def __init__(self, capacity: int = 64) -> None:
        self._a = np.zeros(capacity)
        self._b = np.zeros(capacity)
        self._tie = np.zeros(capacity)
        self._id = np.zeros(capacity, dtype=np.int64)
        self._slot: dict[int, int] = {}
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def __contains__(self, item: object) -> bool:
        return item in self._slot

    def insert(self, item: int, alpha: float, beta: float, tie: float = 0.0) -> None:
        _check(alpha, beta)
        if item in self._slot:
            raise KeyError(f"item {item} is already in the index")
        if self._n == self._a.size:
            for name in ("_a", "_b", "_tie", "_id"):
                old = getattr(self, name)
                setattr(self, name, np.concatenate((old, np.zeros_like(old))))
        i = self._n
        self._a[i], self._b[i], self._tie[i], self._id[i] = alpha, beta, tie, item
        self._slot[item] = i
        self._n += 1

    def delete(self, item: int) -> None:
        i = self._slot.pop(item)
        last = self._n - 1
        if i != last:
            moved = int(self._id[last])
            self._a[i], self._b[i] = self._a[last], self._b[last]
            self._tie[i], self._id[i] = self._tie[last], moved
            self._slot[moved] = i
        self._n = last

    def update(self, item: int, alpha: float, beta: float) -> None:
        _check(alpha, beta)
        i = self._slot[item]
        self._a[i], self._b[i] = alpha, beta

    def update_many(
        self, items: Sequence[int], alphas: Sequence[float], betas: Sequence[float]
    ) -> None:
        a, b = np.asarray(alphas, dtype=np.float64), np.asarray(betas, dtype=np.float64)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError("index coordinates must be finite")
        slots = np.fromiter((self._slot[i] for i in items), dtype=np.int64, count=len(items))
        self._a[slots], self._b[slots] = a, b

    def _order(self, x: float, k: int) -> np.ndarray:
        """Slots of the k best in the total order (score desc, tie asc, id asc)."""
        n = self._n
        s = self._a[:n] * x + self._b[:n]
        if k == 1:
            cand = np.flatnonzero(s == s.max())
        else:
            kth = np.partition(s, n - k)[n - k]
            cand = np.flatnonzero(s >= kth)
        if cand.size == 1:
            return cand
        order = np.lexsort((self._id[cand], self._tie[cand], -s[cand]))
        return cand[order[:k]]

    def argmax(self, x: float) -> int:
        _check_x(x)
        if not self._n:
            raise ValueError("argmax of an empty index")
        return int(self._id[self._order(x, 1)[0]])

    def pop_top(self, x: float, k: int) -> list[int]:
        """The k best at x, best first, removed (= k times argmax then delete)."""
        _check_x(x)
        if not 0 < k <= self._n:
            raise ValueError(f"cannot pop {k} of {self._n} items")
        items = [int(self._id[s]) for s in self._order(x, k)]
        for item in items:
            self.delete(item)
        return items


class HullIndex:
    """A kinetic tournament over slots; leaf `cap + slot` holds slot's line."""

    def __init__(self, capacity: int = 64) -> None:
        self._x = 1.0
        self._alloc(max(2, 1 << max(0, capacity - 1).bit_length()))
        self._slot: dict[int, int] = {}

    def _alloc(self, cap: int) -> None:
        self._cap = cap
        self._win = [-1] * (2 * cap)  # winning slot of each node (-1: empty subtree)
        self._melt = [INF] * (2 * cap)  # earliest x at which a node's subtree may change
        self._a = [0.0] * cap
        self._b = [0.0] * cap
        self._tie = [0.0] * cap
        self._id = [0] * cap
        self._free = list(range(cap - 1, -1, -1))

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, item: object) -> bool:
        return item in self._slot

    # -- one node -------------------------------------------------------------------------
    def _fix(self, n: int) -> None:
        """Winner and certificate of node n from its children, at the current x."""
        win, melt = self._win, self._melt
        c = 2 * n
        left, right = win[c], win[c + 1]
        ml, mr = melt[c], melt[c + 1]
        m = ml if ml < mr else mr
        if left < 0 or right < 0:
            win[n] = right if left < 0 else left
            melt[n] = m
            return
        a, b, x = self._a, self._b, self._x
        al, bl, ar, br = a[left], b[left], a[right], b[right]
        sl, sr = al * x + bl, ar * x + br
        if sl > sr or (sl == sr and self._before(left, right)):
            win[n] = left
            da, db = ar - al, br - bl
        else:
            win[n] = right
            da, db = al - ar, bl - br
        if da == 0.0 and db == 0.0:  # identical lines: the order is the tie key, forever
            melt[n] = m
            return
        # the loser can only catch up (in floating point) once u·x + v ≥ 0
        sa = (al if al > 0 else -al) + (ar if ar > 0 else -ar)
        sb = (bl if bl > 0 else -bl) + (br if br > 0 else -br)
        u = da + _EPS * sa
        v = db + _EPS * sb
        if u * x + v >= 0.0:
            cert = x  # within rounding of a tie: look again at every later query
        elif u <= 0.0:
            cert = INF
        else:
            cert = (-v / u) * _SHRINK
        melt[n] = cert if cert < m else m

    def _before(self, i: int, j: int) -> bool:
        """Equal scores: the smaller (tie, id) wins."""
        return (self._tie[i], self._id[i]) < (self._tie[j], self._id[j])

    def _up(self, leaf: int, slot: int) -> None:
        """Re-fix the ancestors of a changed leaf; stop once nothing above can change."""
        win, melt = self._win, self._melt
        n = leaf >> 1
        while n:
            before_w, before_m = win[n], melt[n]
            self._fix(n)
            if win[n] == before_w and melt[n] == before_m and before_w != slot:
                return
            n >>= 1

    def _descend(self, n: int) -> None:
        c = 2 * n
        if c < self._cap:
            x, melt = self._x, self._melt
            if melt[c] <= x:
                self._descend(c)
            if melt[c + 1] <= x:
                self._descend(c + 1)
        self._fix(n)

    def _rebuild(self) -> None:
        for n in range(self._cap - 1, 0, -1):
            self._fix(n)

    def _advance(self, x: float) -> None:
        _check_x(x)
        if x < self._x:
            self._x = x
            self._rebuild()
        else:
            self._x = x
            if self._melt[1] <= x:
                self._descend(1)

    # -- the index API ------------------------------------------------------------------------
    def insert(self, item: int, alpha: float, beta: float, tie: float = 0.0) -> None:
        _check(alpha, beta)
        if item in self._slot:
            raise KeyError(f"item {item} is already in the index")
        if not self._free:
            self._grow()
        s = self._free.pop()
        self._slot[item] = s
        self._a[s], self._b[s], self._tie[s], self._id[s] = alpha, beta, tie, item
        leaf = self._cap + s
        self._win[leaf] = s
        self._up(leaf, s)

    def delete(self, item: int) -> None:
        s = self._slot.pop(item)
        self._free.append(s)
        leaf = self._cap + s
        self._win[leaf] = -1
        self._up(leaf, s)

    def update(self, item: int, alpha: float, beta: float) -> None:
        _check(alpha, beta)
        s = self._slot[item]
        self._a[s], self._b[s] = alpha, beta
        self._up(self._cap + s, s)

    def update_many(
        self, items: Sequence[int], alphas: Sequence[float], betas: Sequence[float]
    ) -> None:
        """Set many leaves, then re-fix each touched node once, level by level."""
        level = set()
        for item, alpha, beta in zip(items, alphas, betas, strict=True):
            alpha, beta = float(alpha), float(beta)
            _check(alpha, beta)
            s = self._slot[item]
            self._a[s], self._b[s] = alpha, beta
            level.add((self._cap + s) >> 1)
        while level:
            for n in level:
                self._fix(n)
            level = {n >> 1 for n in level if n > 1}

    def argmax(self, x: float) -> int:
        if not self._slot:
            raise ValueError("argmax of an empty index")
        self._advance(x)
        return self._id[self._win[1]]

    def pop_top(self, x: float, k: int) -> list[int]:
        """The k best at x, best first, removed."""
        if not 0 < k <= len(self._slot):
            raise ValueError(f"cannot pop {k} of {len(self._slot)} items")
        out = []
        for _ in range(k):
            item = self.argmax(x)
            self.delete(item)
            out.append(item)
        return out

    def _grow(self) -> None:
        old = [(i, self._a[s], self._b[s], self._tie[s]) for i, s in self._slot.items()]
        self._alloc(2 * self._cap)
        self._slot = {}
        for s, (item, alpha, beta, tie) in enumerate(old):
            self._slot[item] = s
            self._a[s], self._b[s], self._tie[s], self._id[s] = alpha, beta, tie, item
            self._win[self._cap + s] = s
        self._free = list(range(self._cap - 1, len(old) - 1, -1))
        self._rebuild()


def make_index(kind: str) -> PriorityIndex:
    if kind == "hull":
        return HullIndex()
    if kind == "bruteforce":
        return BruteForceIndex()
    raise ValueError(f"index must be 'hull' or 'bruteforce', not {kind!r}")
