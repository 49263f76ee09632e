"""The cohort tree (spec 2.1, 3.4): dotted-path ids, splits, budgets and tree distance.

Cohorts form a hierarchy rooted at "0"; splitting "0.1" into K creates "0.1.0" ... "0.1.{K-1}".
Ids are dotted paths so any party (a client in distributed mode) computes tree distances from the
ids alone (`tree_distance`, `lca`). Only leaves train.

A split keeps the total participant budget: every leaf gets P_total/M, as integers that sum to
exactly P_total (the remainder goes one each to the first leaves in id order). Children start
from exactly the parent's weights (flat vectors, copied) and a deep copy of its optimizer state,
round counter and clock; their clustering state starts fresh (the policy does that part).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ROOT = "0"


def depth(cohort: str) -> int:
    """Number of edges from the root: "0" -> 0, "0.1.0" -> 2."""
    return cohort.count(".")


def parent_of(cohort: str) -> str | None:
    return cohort.rsplit(".", 1)[0] if "." in cohort else None


def lca(a: str, b: str) -> str:
    """Lowest common ancestor of two ids (their longest common dotted prefix)."""
    common = []
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x != y:
            break
        common.append(x)
    return ".".join(common) if common else ROOT


def tree_distance(m: str, other: str) -> int:
    """Hops from m up to the lowest common ancestor of m and other (spec 3.5 [P])."""
    return depth(m) - depth(lca(m, other))


def is_valid_id(cohort: object) -> bool:
    """A dotted path of non-negative integers starting at the root."""
    if not isinstance(cohort, str):
        return False
    parts = cohort.split(".")
    return parts[0] == ROOT and all(p.isdigit() and str(int(p)) == p for p in parts)


@dataclass
class Cohort:
    """One node: its model (flat weights), opaque FL state and bookkeeping."""

    cohort_id: str
    created_round: int = 0
    weights: np.ndarray | None = None
    state: dict[str, Any] = field(default_factory=dict)  # optimizer moments, clock, round, ...
    children: tuple[str, ...] = ()
    removed: bool = False


@dataclass(frozen=True)
class SplitRecord:
    """What one split changed (for bookkeeping and tests)."""

    parent: str
    children: tuple[str, ...]
    round: int
    leaves_before: int
    leaves_after: int


class CohortTree:
    """The hierarchy of cohorts, its leaves and the per-leaf participant budgets."""

    def __init__(self, weights: np.ndarray | None = None, *, max_leaves: int = 4) -> None:
        if max_leaves < 1:
            raise ValueError("max_leaves must be >= 1")
        self.max_leaves = max_leaves
        w = None if weights is None else np.array(weights, dtype=np.float64).ravel()
        self.nodes: dict[str, Cohort] = {ROOT: Cohort(ROOT, 0, w)}
        self.splits: list[SplitRecord] = []
        self.version = 0  # bumps on every change, so clients can tell their leaf list is stale

    # ------------------------------------------------------------------- queries
    def __contains__(self, cohort: object) -> bool:
        return isinstance(cohort, str) and cohort in self.nodes

    def is_leaf(self, cohort: str) -> bool:
        node = self.nodes.get(cohort)
        return node is not None and not node.removed and not node.children

    def leaves(self) -> list[str]:
        """Surviving leaves in id order."""
        return sorted(c for c in self.nodes if self.is_leaf(c))

    @property
    def m(self) -> int:
        return len(self.leaves())

    def alive_children(self, cohort: str) -> list[str]:
        return [c for c in self.nodes[cohort].children if not self.nodes[c].removed]

    def budgets(self, p_total: int) -> dict[str, int]:
        """Equal split of P_total over the leaves, integers summing to exactly P_total."""
        leaves = self.leaves()
        base, extra = divmod(p_total, len(leaves))
        return {c: base + (1 if i < extra else 0) for i, c in enumerate(leaves)}

    # ------------------------------------------------------------------- changes
    def can_split(self, cohort: str, k: int) -> bool:
        return self.is_leaf(cohort) and k >= 2 and self.m + k - 1 <= self.max_leaves

    def split(self, cohort: str, k: int, round: int) -> SplitRecord:
        """Replace leaf `cohort` by k children that start from exactly its weights and state."""
        if not self.is_leaf(cohort):
            raise ValueError(f"cohort {cohort!r} is not a leaf")
        if k < 2:
            raise ValueError("a split needs k >= 2 children")
        before = self.m
        if before + k - 1 > self.max_leaves:
            raise ValueError(f"splitting {cohort!r} would exceed the leaf cap {self.max_leaves}")
        node = self.nodes[cohort]
        kids = tuple(f"{cohort}.{j}" for j in range(k))
        for kid in kids:
            self.nodes[kid] = Cohort(
                kid,
                round,
                None if node.weights is None else node.weights.copy(),
                copy.deepcopy(node.state),
            )
        node.children = kids
        self.version += 1
        rec = SplitRecord(cohort, kids, round, before, self.m)
        self.splits.append(rec)
        return rec

    def remove(self, cohort: str) -> None:
        """Drop a leaf (the optional merge); its siblings keep its clients via MATCH."""
        if not self.is_leaf(cohort):
            raise ValueError(f"cohort {cohort!r} is not a leaf")
        par = parent_of(cohort)
        if par is None or len(self.alive_children(par)) < 2:
            raise ValueError(f"cannot remove {cohort!r}: it is its parent's last cohort")
        self.nodes[cohort].removed = True
        self.version += 1

    def set_weights(self, cohort: str, weights: np.ndarray) -> None:
        """Store a leaf's latest model as a flat float64 vector."""
        if not self.is_leaf(cohort):
            raise ValueError(f"cohort {cohort!r} is not a leaf")
        self.nodes[cohort].weights = np.array(weights, dtype=np.float64).ravel()

    def weights(self, cohort: str) -> np.ndarray | None:
        return self.nodes[cohort].weights
