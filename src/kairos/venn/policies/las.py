"""LAS (least attained service): the job that has received the fewest devices so far first.

Not in the paper; a classic size-agnostic baseline (Tiresias's discretised 2D-LAS without the
queues), useful because it needs no demand information at all.
"""

from __future__ import annotations

from kairos.venn.policy import OrderedPolicy
from kairos.venn.view import RequestView


class LASPolicy(OrderedPolicy):
    name = "las"

    def sort_key(self, req: RequestView) -> tuple[float, ...]:
        return (float(req.served), req.arrival, float(req.request_id))
