"""Coordinator request matching (spec 3.7): every accepted request ends at a leaf.

A client may not yet know that the cohort it asks for has split (or was dropped by the optional
merge). The coordinator then walks down from the requested cohort: at the first level it follows
the client's claimed cluster index L when it names a surviving child, otherwise (and at deeper
levels, where the client has no index) it picks a surviving child uniformly. Unknown or malformed
ids resolve through their nearest existing ancestor, at worst the root. Requests are dropped only
while the coordinator recovers or for a blacklisted client.

The uniform child is drawn from the *requesting client's* generator, so centralized and
distributed runs draw the same numbers (spec 3.10).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairos.auxo.tree import ROOT, CohortTree, is_valid_id, parent_of


@dataclass(frozen=True)
class AffinityRequest:
    """What a client sends at check-in: its id and, optionally, a cohort with its L and R."""

    client_id: int
    cohort_id: str | None = None
    label: int | None = None
    reward: float | None = None


def _start(tree: CohortTree, cohort: str | None) -> str:
    """The requested cohort if it exists and survives, else its nearest surviving ancestor."""
    if cohort is None or not is_valid_id(cohort):
        return ROOT
    m: str | None = cohort
    while m is not None and (m not in tree or tree.nodes[m].removed):
        m = parent_of(m)
    return ROOT if m is None else m


def match(
    request: AffinityRequest,
    tree: CohortTree,
    rng: np.random.Generator,
    *,
    recovering: bool = False,
    blacklisted: bool = False,
) -> str | None:
    """MATCH: the leaf that will serve the request, or None when the request is dropped."""
    if recovering or blacklisted:
        return None
    m = _start(tree, request.cohort_id)
    hint = request.label if m == request.cohort_id else None
    while not tree.is_leaf(m):
        kids = tree.alive_children(m)
        preferred = f"{m}.{hint}" if hint is not None else None
        m = preferred if preferred in kids else kids[int(rng.integers(len(kids)))]
        hint = None
    return m
