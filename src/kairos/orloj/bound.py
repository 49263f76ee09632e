"""What any scheduler could finish: a clairvoyant bound on the finish rate of one trace.

Every system here is online and learns latencies only from profiles. The bound's scheduler is
offline and clairvoyant: it knows each request's release, deadline and solo latency l_i in
advance. On the simulator's worker (one batch at a time, non-preemptive, a batch of k whose
longest member takes l runs g_k(l); profiling off the critical path), no policy can finish
more requests on time than it, so the gap from a system to the bound is what scheduling could
still win on that trace, and the rest is the trace itself (work that no schedule can fit).

* `exact_optimum` (small instances, n <= 12): dynamic programming over the subsets served on
  time. For a set S, only the earliest time a schedule serving exactly S on time can free the
  worker matters (anything after that only needs the worker), and a schedule is a prefix
  followed by its last batch T, so best[S] = min over T of max(best[S \\ T], max release in
  T) + g_|T|(max l in T), kept only if that is <= every deadline in T. O(3^n).
* `relaxation_bound` (any size): a batch B of k takes g_k(max l) >= sum over its members of
  g_k(l_i)/k, so each member on time can be charged w_i = min_k g_k(l_i)/k of worker time
  inside [release_i, deadline_i] (the batch runs there). Dropping the batching structure
  leaves a preemptive one-machine problem with windows; its fractional version (serve a
  fraction x_i of request i) is a linear program whose optimum bounds the count from above.
  Only batch sizes whose g_k(l_i) fits in i's window count (a long request under a tight SLO
  cannot share a batch of 16); a request no batch size fits (not even alone) gets x_i = 0.

Both are upper bounds on every policy's finish count under the simulator's contract; the
property test checks policy <= exact <= relaxation on random small traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

from kairos.orloj.batchdist import BatchLatencyModel

__all__ = ["exact_optimum", "relaxation_bound", "work_share"]

Times: TypeAlias = Sequence[float] | np.ndarray  # one value per request, in ms

EXACT_MAX = 12


def _durations(model: BatchLatencyModel, k: int, solo: np.ndarray) -> np.ndarray:
    return model.shift(k) + model.scale(k) * solo


def work_share(
    solo: Times, model: BatchLatencyModel, max_batch: int, window: Times | None = None
) -> np.ndarray:
    """w_i = min of g_k(l_i)/k over the batch sizes k <= max_batch whose batch could end on time
    (g_k(l_i) <= `window`_i, its SLO): the least worker time request i can be charged in any
    batch it finishes on time in (that batch runs g_k(max) >= the mean of its members'
    g_k(l), and runs inside i's window). Infinite where no batch size fits."""
    solo_arr = np.asarray(solo, dtype=float)
    durations = np.vstack([_durations(model, k, solo_arr) for k in range(1, max_batch + 1)])
    shares = durations / np.arange(1, max_batch + 1)[:, None]
    if window is not None:
        shares = np.where(durations <= np.asarray(window, dtype=float), shares, np.inf)
    return np.min(shares, axis=0)


def exact_optimum(
    release: Times,
    deadline: Times,
    solo: Times,
    model: BatchLatencyModel,
    max_batch: int = 16,
) -> int:
    """The most requests any schedule finishes by their deadlines (n <= `EXACT_MAX`)."""
    n = len(solo)
    if n > EXACT_MAX:
        raise ValueError(f"exact_optimum is O(3^n): use it for n <= {EXACT_MAX}, not {n}")
    r, d, ls = (np.asarray(v, dtype=float) for v in (release, deadline, solo))
    full = 1 << n
    members = [[i for i in range(n) if mask >> i & 1] for mask in range(full)]
    # per candidate batch T: (latest release, its run time, earliest deadline); inf if too big
    run = np.full(full, np.inf)
    latest = np.zeros(full)
    due = np.full(full, np.inf)
    for mask in range(1, full):
        ids = members[mask]
        if len(ids) <= max_batch:
            run[mask] = model.shift(len(ids)) + model.scale(len(ids)) * float(ls[ids].max())
            latest[mask], due[mask] = float(r[ids].max()), float(d[ids].min())
    best = np.full(full, np.inf)
    best[0] = -np.inf
    served = 0
    for mask in range(1, full):
        t = mask
        while t:  # every non-empty submask T as the last batch
            prev = best[mask ^ t]
            if np.isfinite(run[t]) and prev < np.inf:
                end = max(prev, latest[t]) + run[t]
                if end <= due[t] and end < best[mask]:
                    best[mask] = end
            t = (t - 1) & mask
        if best[mask] < np.inf:
            served = max(served, len(members[mask]))
    return served


def relaxation_bound(
    release: Times,
    deadline: Times,
    solo: Times,
    model: BatchLatencyModel,
    max_batch: int = 16,
) -> float:
    """An upper bound on the requests any schedule finishes on time (fractional, any n)."""
    r, d, ls = (np.asarray(v, dtype=float) for v in (release, deadline, solo))
    w = work_share(ls, model, max_batch, d - r)
    idx = np.flatnonzero(np.isfinite(w))  # the others cannot finish even alone
    if idx.size == 0:
        return 0.0
    points = np.unique(np.concatenate([r[idx], d[idx]]))
    lengths = np.diff(points)
    first = np.searchsorted(points, r[idx])
    last = np.searchsorted(points, d[idx])  # intervals first .. last-1 lie in the window
    counts = last - first
    n_x, n_y = idx.size, int(counts.sum())
    job_of_y = np.repeat(np.arange(n_x), counts)
    starts = np.repeat(first - np.cumsum(np.concatenate([[0], counts[:-1]])), counts)
    interval_of_y = starts + np.arange(n_y)
    # variables: x (n_x), then y (n_y): the work of job j in interval I
    # capacity rows: sum_j y_{j,I} <= |I|; work rows: sum_I y_{j,I} - w_j x_j = 0
    cap = csr_matrix(
        (np.ones(n_y), (interval_of_y, n_x + np.arange(n_y))), shape=(lengths.size, n_x + n_y)
    )
    rows = np.concatenate([job_of_y, np.arange(n_x)])
    cols = np.concatenate([n_x + np.arange(n_y), np.arange(n_x)])
    vals = np.concatenate([np.ones(n_y), -w[idx]])
    work = csr_matrix((vals, (rows, cols)), shape=(n_x, n_x + n_y))
    cost = np.concatenate([-np.ones(n_x), np.zeros(n_y)])
    bounds = [(0.0, 1.0)] * n_x + [(0.0, None)] * n_y
    res = linprog(
        cost,
        A_ub=cap,
        b_ub=lengths,
        A_eq=work,
        b_eq=np.zeros(n_x),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"the relaxation LP failed: {res.message}")
    return float(-res.fun)
