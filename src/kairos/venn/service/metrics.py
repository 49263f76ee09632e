"""`/metrics` for the Venn service: a prometheus-client collector (`kairos.runtime.prometheus`).

Each scrape reads the service's counters, job table and manager once. Names are prefixed
`kairos_venn_`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from kairos.runtime.prometheus import Families, SnapshotCollector
from kairos.venn.service.core import VennService
from kairos.venn.service.shared import SharedService

PREFIX = "kairos_venn_"


class VennCollector(SnapshotCollector):
    """Reads the running service (`service()`; None before startup: no families) and the HTTP
    answers by status."""

    prefix = PREFIX

    def __init__(
        self,
        service: Callable[[], VennService | SharedService | None],
        http_responses: Counter[int],
    ) -> None:
        self.service = service
        self.http_responses = http_responses

    def snapshot(self, out: Families) -> None:
        s = self.service()
        if s is None:
            return
        c = s.counters
        out.counter("checkins", "Device check-ins.", c.checkins)
        out.counter("offers", "Job offers sent to devices.", c.offers)
        out.counter("accepts", "Offers accepted by devices.", s.manager.stats.checkins)
        out.counter("assignments", "Devices assigned to a job's round.", c.assigned)
        out.counter("results", "Results counted toward a round.", c.results)
        out.counter("late_results", "Results after their round completed.", c.late_results)
        out.counter("rounds_completed", "Rounds that got enough responses.", c.rounds_done)
        out.counter(
            "rounds_aborted", "Round attempts aborted at their deadline and resubmitted.", c.aborted
        )
        active = sum(j.finished is None for j in s.jobs.values())
        out.gauge("jobs_active", "Registered, unfinished jobs.", active)
        out.gauge("rounds_open", "Open rounds.", len(s.rounds))
        out.counter("plans", "Plans computed by the policy.", s.manager.stats.plans)
        trips = dict(sorted(s.store.trips.items()))
        out.labelled("db_round_trips", "counter", "Store round trips by operation.", "op", trips)
        if isinstance(s, SharedService):
            out.counter(
                "assign_conflicts", "Assignments refused: the round filled elsewhere.", s.conflicts
            )
        http = {str(k): v for k, v in sorted(self.http_responses.items())}
        out.labelled("http_responses", "counter", "HTTP answers by status.", "status", http)
