"""The offline optimum of IRS (Appendix C.2) as an integer program, for validation only.

Devices i arrive at t_i; jobs j need D_j devices; x_ij ∈ {0,1} assigns device i to job j.
Each device serves at most one job; x_ij <= e_ij (the printed `Σ_j x_ij e_ij <= 1` is a typo);
a device that arrives before a job cannot serve it; a job's completion is
`T_j = max_i x_ij t_i`; minimise the mean of `T_j - a_j`. Demands are `<= D_j` with a
penalty per missing device larger than any schedule's total delay, so an infeasible instance
still solves (and reports its shortfall) while a feasible one gets its exact optimum. Solved
with `scipy.optimize.milp` (HiGHS); keep instances small (q <= 200 devices, m <= 8 jobs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix


@dataclass(frozen=True)
class ILPResult:
    assignment: np.ndarray  # device -> job index, or -1
    completion: np.ndarray  # per job: time of its last device (nan if unserved)
    served: np.ndarray  # devices per job
    mean_delay: float  # mean of completion - arrival over jobs (the objective)
    feasible: bool  # every demand met
    status: str


def solve_irs_ilp(
    times: Sequence[float],
    eligible: np.ndarray,
    demand: Sequence[int],
    arrival: Sequence[float] | None = None,
    time_limit_s: float = 120.0,
) -> ILPResult:
    """Solve the IRS ILP; devices may come in any order.

    The completion `T_j = max_i t_i x_ij` is written in its time-indexed form, which has a far
    tighter LP relaxation than the printed `T_j >= t_i x_ij` (which HiGHS cannot close within
    minutes at q=150): with devices sorted by time and `z_jk = 1` iff job j holds all its
    D_j devices among the first k, `D_j z_jk <= Σ_{i<=k} x_ij`, z is monotone in k, a job
    complete by k takes no later device, and `T_j = t_last - Σ_k (t_next(k) - t_k) z_jk`. Only
    the positions where j can complete (its D_j-th usable device and later) get a z. Both forms
    have the same optimum.
    """
    t_in = np.asarray(times, dtype=np.float64)
    order = np.argsort(t_in, kind="stable")
    t = t_in[order]
    e = np.asarray(eligible, dtype=bool)[order]
    d = np.asarray(demand, dtype=np.int64)
    q, m = e.shape
    if t.shape != (q,) or d.shape != (m,):
        raise ValueError("times must have one entry per device and demand one per job")
    a = np.zeros(m) if arrival is None else np.asarray(arrival, dtype=np.float64)
    usable = e & (t[:, None] >= a[None, :])
    usable &= t[:, None] <= _latest_useful(t, usable, d, a)[None, :]
    pairs = [(int(i), int(j)) for i, j in zip(*np.nonzero(usable), strict=True)]
    xi = {pair: k for k, pair in enumerate(pairs)}
    nx = len(pairs)
    zpos: list[tuple[int, int]] = []  # (job, device position) for every z variable
    for j in range(m):
        u = np.flatnonzero(usable[:, j])
        for pos in u[max(int(d[j]) - 1, 0) :]:
            zpos.append((j, int(pos)))
    zi = {pz: nx + k for k, pz in enumerate(zpos)}
    nvar = nx + len(zpos)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(coef: dict[int, float], low: float, high: float) -> None:
        r = len(lo)
        rows.extend([r] * len(coef))
        cols.extend(coef)
        vals.extend(coef.values())
        lo.append(low)
        hi.append(high)

    by_device: dict[int, list[int]] = {}
    by_job: dict[int, list[int]] = {}
    for (i, j), k in xi.items():
        by_device.setdefault(i, []).append(k)
        by_job.setdefault(j, []).append(k)
    for ks in by_device.values():  # each device at most once
        add(dict.fromkeys(ks, 1.0), 0.0, 1.0)
    demand_rows = []
    for j in range(m):  # D_j devices per job (relaxed to <= D_j if that is infeasible)
        demand_rows.append(len(lo))
        add(dict.fromkeys(by_job.get(j, []), 1.0), float(d[j]), float(d[j]))
    # prefix counts c_jp = #devices of j among the first p (continuous; a chain keeps the
    # matrix sparse): c_jp - c_j,prev - Σ_{prev < i <= p} x_ij = 0, then D_j z_jp <= c_jp
    cpos = {pz: nvar + k for k, pz in enumerate(zpos)}
    nvar += len(zpos)
    cost = np.zeros(nvar)
    for j in range(m):
        mine = [pos for jj, pos in zpos if jj == j]
        prev = -1
        for n, pos in enumerate(mine):
            z, cnt = zi[(j, pos)], cpos[(j, pos)]
            new = [xi[(i, j)] for i in range(prev + 1, pos + 1) if (i, j) in xi]
            link = {cnt: 1.0, **dict.fromkeys(new, -1.0)}
            if n:
                link[cpos[(j, mine[n - 1])]] = -1.0
            add(link, 0.0, 0.0)
            add({z: float(d[j]), cnt: -1.0}, -np.inf, 0.0)  # complete by pos needs D_j so far
            if n + 1 < len(mine):
                nxt = mine[n + 1]
                add({z: 1.0, zi[(j, nxt)]: -1.0}, -np.inf, 0.0)  # monotone
                cost[z] = -(t[nxt] - t[pos])  # completing one step earlier saves that gap
            for i in range(pos + 1, mine[n + 1] + 1 if n + 1 < len(mine) else q):
                if (i, j) in xi:  # complete by pos => none of the next devices
                    add({xi[(i, j)]: 1.0, z: 1.0}, -np.inf, 1.0)
            prev = pos
    for j, j2 in _twins(usable, d, a):  # identical jobs finish in index order (symmetry)
        for pos in np.flatnonzero(usable[:, j])[max(int(d[j]) - 1, 0) :]:
            add({zi[(j2, int(pos))]: 1.0, zi[(j, int(pos))]: -1.0}, -np.inf, 0.0)
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), nvar)).tocsr()
    nz = len(zpos)
    integer = np.concatenate([np.zeros(nx), np.ones(nz), np.zeros(nz)])
    upper = np.concatenate([np.ones(nx + nz), np.full(nz, np.inf)])
    # Only z needs to be integral: once each job's completion position is fixed, the x-part
    # is a bipartite b-matching (each job exactly D_j devices from its prefix), whose polytope
    # is integral. If the solver still returns a fractional x, x is made integer too. When the
    # demands cannot all be met, they relax to <= D_j and each missing device costs more than
    # any schedule's total delay, so the shortfall is minimised first.
    big = m * (float(t.max(initial=0.0)) + 1.0) + 1.0
    res: Any = None
    for relaxed in (False, True):
        if relaxed:
            for row in demand_rows:
                lo[row] = 0.0
        c = cost.copy()
        if relaxed:
            c[:nx] = -big
        for x_integral in (0.0, 1.0):
            res = milp(
                c,
                constraints=LinearConstraint(matrix, lo, hi),
                integrality=np.where(np.arange(nvar) < nx, x_integral, integer),
                bounds=Bounds(np.zeros(nvar), upper),
                options={"time_limit": time_limit_s, "disp": False, "mip_rel_gap": 1e-9},
            )
            if res.x is None or np.allclose(res.x[:nx], np.round(res.x[:nx]), atol=1e-6):
                break
        if res.x is not None:
            break
    if res is None or res.x is None:
        raise RuntimeError(f"the ILP solver failed: {res.message if res else 'no run'}")
    x = np.zeros((q, m), dtype=bool)
    for (i, j), k in xi.items():
        x[order[i], j] = res.x[k] > 0.5
    served = x.sum(axis=0)
    assignment = np.where(x.any(axis=1), x.argmax(axis=1), -1)
    completion = np.array(
        [float(t_in[x[:, j]].max()) if served[j] else np.nan for j in range(m)], dtype=np.float64
    )
    feasible = bool(np.all(served == d))
    delay = float(np.mean(completion - a)) if feasible else float("nan")
    status = "optimal" if res.status == 0 else str(res.message)
    return ILPResult(assignment, completion, served, delay, feasible, status)


def _twins(usable: np.ndarray, d: np.ndarray, a: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (j, j2), j < j2, of interchangeable jobs (same devices, demand and arrival)."""
    out = []
    last: dict[tuple[bytes, float, float], int] = {}
    for j in range(usable.shape[1]):
        key = (usable[:, j].tobytes(), float(d[j]), float(a[j]))
        if key in last:
            out.append((last[key], j))
        last[key] = j
    return out


def _latest_useful(t: np.ndarray, usable: np.ndarray, d: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Per job, a time after which no optimal schedule gives it a device (pruning only).

    A greedy schedule (each device to the eligible job with the least remaining demand) bounds
    the optimum's total delay by UB; job j's own delay can then be at most UB minus every
    other job's lower bound (the time of its D_j-th usable device). If the greedy fails to
    serve everyone there is no bound.
    """
    m = usable.shape[1]
    left = d.astype(np.int64).copy()
    done = np.full(m, np.nan)
    for i in range(len(t)):
        cand = np.flatnonzero(usable[i] & (left > 0))
        if cand.size:
            j = cand[np.argmin(left[cand])]
            left[j] -= 1
            if left[j] == 0:
                done[j] = t[i]
    lower = np.full(m, np.inf)
    for j in range(m):
        u = np.flatnonzero(usable[:, j])
        if d[j] == 0:
            lower[j] = a[j]
        elif u.size >= d[j]:
            lower[j] = t[u[d[j] - 1]]
    if np.isnan(done).any() or not np.isfinite(lower).all():
        return np.full(m, np.inf)
    ub = float(np.sum(done - a))
    slack = ub - (np.sum(lower - a) - (lower - a))  # UB minus the others' lower bounds
    return a + slack + 1e-9
