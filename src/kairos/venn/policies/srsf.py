"""SRSF (Tiresias-style): smallest remaining demand of the current request first.

Blind to eligibility and contention, and to the number of rounds, exactly as the paper's
baseline; the order is recomputed on the same triggers as Venn's.
"""

from __future__ import annotations

from kairos.venn.policy import OrderedPolicy
from kairos.venn.view import RequestView


class SRSFPolicy(OrderedPolicy):
    name = "srsf"

    def sort_key(self, req: RequestView) -> tuple[float, ...]:
        return (float(req.remaining), req.arrival, float(req.request_id))
