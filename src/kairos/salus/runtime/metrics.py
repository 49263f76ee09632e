"""`/metrics` of the Salus service: jobs by state, lanes, bytes in use and reserved,
iterations run, HTTP answers by status. An adversarial client can check them for leaks: with
no open job, the used bytes and the lanes must go back to zero."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kairos.runtime.prometheus import Families, SnapshotCollector
from kairos.salus.runtime.spec import State

if TYPE_CHECKING:
    from kairos.salus.runtime.service import SalusService


class SalusCollector(SnapshotCollector):
    prefix = "kairos_salus_"

    def __init__(self, service: SalusService, http_counts: Counter[int]) -> None:
        self.service = service
        self.http_counts = http_counts

    def snapshot(self, out: Families) -> None:
        s = self.service.stats()
        by_state = {state.value: float(s["jobs"].get(state.value, 0)) for state in State}
        out.labelled("jobs", "gauge", "jobs the service remembers, by state", "state", by_state)
        out.gauge("lanes", "lanes in the ephemeral region", float(len(s["lanes"])))
        out.gauge("capacity_bytes", "usable device memory C", float(s["capacity_bytes"]))
        out.gauge(
            "reserved_bytes",
            "persistent budgets of admitted jobs plus lane sizes (Eq. 2.1's left side)",
            float(s["reserved_bytes"]),
        )
        out.gauge("used_bytes", "bytes live in the jobs' tensor storages", float(s["used_bytes"]))
        out.counter("iterations", "iterations run", float(s["iterations"]))
        out.counter("switches", "switches between jobs on a lane", float(s["switches"]))
        out.counter(
            "moved_bytes",
            "model-state bytes found moved when a lane switched jobs (0 unless suspend/resume)",
            float(s["moved_bytes"]),
        )
        out.labelled(
            "http_responses",
            "counter",
            "HTTP answers by status code",
            "code",
            {str(k): float(v) for k, v in sorted(self.http_counts.items())},
        )
