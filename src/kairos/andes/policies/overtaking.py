"""Bounded overtaking: a prompt is overdue once more than `k` later prompts started first.

Paced shortest-first (policies/pacing.py) needs an aging bound so long prompts do not
starve. A bound in seconds (`PacingConfig.starve_after_s`) caps E4's longest wait, but under a
burst (E2) every prompt waits past it, so the whole queue ages, the order turns into
arrival order and shortest-first's gain is lost. Counting how many prompts that arrived
after a prompt were admitted before it measures the unfairness itself, not the load: in a
burst a prompt that waits long behind earlier arrivals is not overtaken, so it does not
age, while a long prompt that short ones keep passing ages after `k` of them, at any load.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from kairos.andes.request import RequestView, Status


class OvertakeCount:
    """How many later-arriving prompts each waiting prompt has seen admitted before it.

    The policy calls `observe` once per decision: a prompt that waited (no token yet) in
    the last view and is not waiting now was admitted; each prompt still waiting that
    arrived earlier was overtaken by it."""

    def __init__(self) -> None:
        self._waiting: dict[str, float] = {}  # id -> arrival, fresh prompts last seen waiting
        self.count: dict[str, int] = {}

    def observe(self, waiting: Sequence[RequestView]) -> None:
        now = {r.request_id: r.arrival for r in waiting if _fresh(r)}
        started = sorted(a for i, a in self._waiting.items() if i not in now)
        if started:
            for i, arrival in now.items():
                # admitted prompts that arrived after this one
                n = len(started) - bisect_right(started, arrival)
                if n:
                    self.count[i] = self.count.get(i, 0) + n
        for i in self._waiting:
            if i not in now:
                self.count.pop(i, None)
        self._waiting = now

    def overdue(self, k: int, per_waiting: float = 0.0) -> frozenset[str]:
        """Ids of the waiting prompts overtaken more than `k` times, or more than
        `per_waiting` x the number of prompts waiting now if that is larger."""
        bound = max(k, per_waiting * len(self._waiting))
        return frozenset(i for i, n in self.count.items() if n > bound)


def _fresh(r: RequestView) -> bool:
    return r.status is Status.WAITING and r.generated == 0
