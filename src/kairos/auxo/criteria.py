"""Heterogeneity estimate and partition criteria (spec 3.3, Lemma 1 and Appendix B).

Objective (Eq. 3.1): J = sum_m 1/(2|C_m|) sum_{i,j in C_m} ||x_i - x_j||^2, which equals the
within-cluster sum of squares sum_m sum_{i in C_m} ||x_i - mu_m||^2 (`pairwise_objective` and
`within_sse` compute the two sides). Auxo evaluates it on update features, never on data.

Lemma 1 (Appendix B) simplifies the FedAvg bound to h(P, G) = theta/P + gamma G^2/P + rho G^2 +
xi. Splitting into K cohorts keeps G^2/P fixed when G drops by sqrt(K); then h does not grow as P
shrinks iff P >= sqrt(theta P_0 / (rho G_0^2)). The appendix writes the constant with eta~^2,
which disagrees with its own theta and rho; `alpha` follows the spec (eta~ to the first power).

The split test, per clustering round on the labelled participants:
- heterogeneity: within-SSE / total-SSE <= 1/K (`het_rule="G"`, G_children <= G_0/sqrt(K)) or
  <= 1/sqrt(K) (`het_rule="J"`), for `patience` consecutive clustering rounds;
- separation (E0 of the spec, "discernible clusters emerge", §3.4.2): for every pair of
  sub-clusters, project their points on the line joining the two centroids; the 1-D
  within/total SSE ratio, pooled over the last `separation_window` rounds, must be at most
  `separation_factor` times the ratio a single Gaussian blob gives, 1 - 2/pi. The SSE ratio alone
  passes on one 2-D blob in a quarter to three quarters of rounds, so the spec asks for this;
- resources, leaf cap, members (n_min distinct clients per sub-cluster, size ratio), timing, or
  a fixed schedule of cohort-local rounds (the authors' code) instead of all of these but the cap.

Note: with K=2, four equal clusters on a square give a whole-space SSE ratio of 1/2 plus noise
for the best 2-way split (2/3 on a simplex), so the default rule "G" will not split them; E0 runs
with `het_rule="J"`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from kairos.auxo.params import AuxoParams

BLOB_RATIO = 1.0 - 2.0 / math.pi  # best 2-split within/total SSE of one 1-D Gaussian


# ------------------------------------------------------------------- objective and identities
def pairwise_objective(points: np.ndarray) -> float:
    """1/(2|C|) sum over ordered pairs (i, j) of ||x_i - x_j||^2 (Eq. 3.1, one cluster)."""
    x = np.asarray(points, dtype=np.float64)
    if x.shape[0] == 0:
        return 0.0
    diff = x[:, None, :] - x[None, :, :]
    return float((diff**2).sum() / (2 * x.shape[0]))


def total_sse(points: np.ndarray) -> float:
    """sum_i ||x_i - mean||^2."""
    x = np.asarray(points, dtype=np.float64)
    if x.shape[0] == 0:
        return 0.0
    return float(((x - x.mean(axis=0)) ** 2).sum())


def within_sse(points: np.ndarray, labels: np.ndarray, k: int) -> float:
    """sum_k sum_{i in A_k} ||x_i - mu_k||^2 over labels 0..k-1 (unlabelled rows ignored)."""
    x = np.asarray(points, dtype=np.float64)
    return sum(total_sse(x[labels == j]) for j in range(k))


def het_threshold(k: int, rule: str) -> float:
    """Largest within/total SSE ratio that counts as enough reduction for K children."""
    return 1.0 / k if rule == "G" else 1.0 / math.sqrt(k)


@dataclass(frozen=True)
class HetStats:
    """One round's heterogeneity estimate on the labelled participants of one cohort."""

    g0_sq: float  # mean ||f - mu||^2 over labelled participants
    g_children_sq: float  # size-weighted mean of the sub-clusters' G_k^2
    sizes: tuple[int, ...]
    sep_within: float  # worst pair's projected within-SSE
    sep_total: float  # worst pair's projected total SSE

    @property
    def ratio(self) -> float:
        """within-SSE / total-SSE = G_children^2 / G_0^2 (inf when there is no spread)."""
        return self.g_children_sq / self.g0_sq if self.g0_sq > 0 else math.inf

    @property
    def separation(self) -> float:
        return self.sep_within / self.sep_total if self.sep_total > 0 else 1.0


def projected_ratio(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(within, total) SSE of two groups projected on the line through their means."""
    axis = a.mean(axis=0) - b.mean(axis=0)
    norm = float(np.linalg.norm(axis))
    if norm <= 1e-12:
        return 1.0, 1.0
    pa, pb = a @ (axis / norm), b @ (axis / norm)
    both = np.concatenate([pa, pb])
    within = float(((pa - pa.mean()) ** 2).sum() + ((pb - pb.mean()) ** 2).sum())
    return within, float(((both - both.mean()) ** 2).sum())


def het_stats(features: np.ndarray, labels: np.ndarray, k: int) -> HetStats | None:
    """G_0^2, G_children^2 and the least separated pair; None unless every sub-cluster has >=2."""
    f = np.asarray(features, dtype=np.float64)
    lab = np.asarray(labels)
    mask = (lab >= 0) & (lab < k)
    f, lab = f[mask], lab[mask]
    sizes = tuple(int((lab == j).sum()) for j in range(k))
    if min(sizes) < 2:
        return None
    n = f.shape[0]
    worst = (0.0, 0.0)
    for a in range(k):
        for b in range(a + 1, k):
            w, t = projected_ratio(f[lab == a], f[lab == b])
            if t <= 0 or (worst[1] == 0 or w / t > worst[0] / worst[1]):
                worst = (w, t)
    return HetStats(total_sse(f) / n, within_sse(f, lab, k) / n, sizes, worst[0], worst[1])


# ------------------------------------------------------------------------------ Lemma 1 bound
def bound_h(p: float, g: float, theta: float, gamma: float, rho: float, xi: float = 0.0) -> float:
    """Simplified FedAvg bound h(P, G) = theta/P + gamma G^2/P + rho G^2 + xi (Appendix B)."""
    return theta / p + gamma * g * g / p + rho * g * g + xi


def min_resource(p0: float, g0: float, theta: float, rho: float) -> float:
    """Least per-cohort P for which h does not grow as P shrinks: sqrt(theta P_0/(rho G_0^2))."""
    return math.sqrt(theta * p0 / (rho * g0 * g0))


def alpha(sigma: float, local_steps: int, beta: float, eta: float) -> float:
    """alpha = sqrt(theta/rho) ~ sqrt(sigma^2 / (18 k beta eta~)) (spec 7; not the eta~^2 typo)."""
    return math.sqrt(sigma * sigma / (18.0 * local_steps * beta * eta))


# ---------------------------------------------------------------------- the partition decision
@dataclass
class PartitionMonitor:
    """Per-cohort memory the criteria need: recent test results and who was ever labelled what.

    It holds no client data: only counts, SSE sums and client ids with their labels.
    """

    k: int
    created_round: int = 0
    streak: int = 0  # consecutive clustering rounds passing the heterogeneity test
    sep_window: deque[tuple[float, float]] = field(default_factory=deque)
    ever: list[set[int]] = field(default_factory=list)
    last: HetStats | None = None

    def __post_init__(self) -> None:
        if not self.ever:
            self.ever = [set() for _ in range(self.k)]

    def observe(
        self, client_ids: np.ndarray, features: np.ndarray, labels: np.ndarray, params: AuxoParams
    ) -> HetStats | None:
        """Record one clustering round's labels and heterogeneity estimate."""
        for cid, lab in zip(
            np.asarray(client_ids).tolist(), np.asarray(labels).tolist(), strict=True
        ):
            if 0 <= lab < self.k:
                self.ever[lab].add(int(cid))
        stats = het_stats(features, labels, self.k)
        self.last = stats
        if stats is None:
            self.streak = 0
            return None
        passed = stats.ratio <= het_threshold(self.k, params.het_rule)
        self.streak = self.streak + 1 if passed else 0
        self.sep_window.append((stats.sep_within, stats.sep_total))
        while len(self.sep_window) > params.separation_window:
            self.sep_window.popleft()
        return stats

    def pooled_separation(self) -> float:
        w = sum(x for x, _ in self.sep_window)
        t = sum(y for _, y in self.sep_window)
        return w / t if t > 0 else 1.0


@dataclass(frozen=True)
class Decision:
    """Whether to split, and each criterion's verdict (for reports and tests)."""

    split: bool
    checks: dict[str, bool]


def decide_partition(
    monitor: PartitionMonitor, *, round_local: int, m_leaves: int, params: AuxoParams
) -> Decision:
    """PARTITIONCRITERIA for one cohort after its clustering round (spec 3.3)."""
    k = params.k
    cap = m_leaves + k - 1 <= params.max_leaves
    if isinstance(params.partition_schedule, tuple):
        on_schedule = round_local in params.partition_schedule
        return Decision(on_schedule and cap, {"schedule": on_schedule, "cap": cap})
    p_child = params.p_total / (m_leaves + k - 1)
    resources = p_child >= params.p_min_resolved
    stats = monitor.last
    if params.alpha_bound is not None:
        resources = (
            resources
            and stats is not None
            and stats.g0_sq > 0
            and (
                p_child
                >= params.alpha_bound
                * math.sqrt(params.p_total / m_leaves)
                / math.sqrt(stats.g0_sq)
            )
        )
    het = monitor.streak >= params.patience
    separated = params.separation_factor is None or (
        len(monitor.sep_window) >= min(params.separation_window, params.patience)
        and monitor.pooled_separation() <= params.separation_factor * BLOB_RATIO
    )
    n_min = params.n_min(m_leaves)
    counts = [len(s) for s in monitor.ever]
    members = min(counts) >= max(n_min, 1)
    if members and m_leaves > 1:
        lo, hi = params.size_ratio
        members = all(lo < counts[0] / c < hi for c in counts[1:] if c > 0)
    timing = (
        params.r_min_partition <= round_local <= params.r_max_partition
        and round_local - monitor.created_round >= params.min_gap
    )
    checks = {
        "heterogeneity": het,
        "separation": separated,
        "resources": resources,
        "cap": cap,
        "members": members,
        "timing": timing,
    }
    return Decision(all(checks.values()), checks)
