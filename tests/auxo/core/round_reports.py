"""Hand-built rounds for the placement tests: a two-leaf tree and the reports of its rounds."""

from __future__ import annotations

from kairos.auxo.policy import RoundReport

LEAVES = ["0.0", "0.1"]


def report(cohort: str, ids: list[int], deltas: list[float] | None) -> RoundReport:
    """One round of `cohort` with `ids` participating; `deltas` their rewards (None: no
    reward was given, as before a split)."""
    return RoundReport(
        cohort, tuple(ids), tuple(0 for _ in ids), None if deltas is None else tuple(deltas),
        "relabelled", None, None, None,
    )  # fmt: skip
