"""FIFO: jobs in arrival order; a device goes to the first eligible job that needs devices.

With a `TierMatcher` this is the ablation "Venn w/o scheduling" (FIFO order plus tier matching
on the requests at the head of the line).
"""

from __future__ import annotations

from kairos.venn.policy import OrderedPolicy
from kairos.venn.view import RequestView


class FIFOPolicy(OrderedPolicy):
    name = "fifo"

    def sort_key(self, req: RequestView) -> tuple[float, ...]:
        return (req.arrival, float(req.request_id))
