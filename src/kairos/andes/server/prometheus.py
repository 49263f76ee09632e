"""`/metrics` for the Andes server: a prometheus-client collector (`kairos.runtime.prometheus`).

Each scrape reads one `EngineStats` snapshot plus the server's own counters, so a scrape never
mixes two moments of the engine. Names are prefixed `kairos_andes_`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from kairos.andes.engine.api import EngineStats
from kairos.report.stats import finite, percentile_key, percentile_summary
from kairos.runtime.prometheus import CONTENT_TYPE, Families, SnapshotCollector

PREFIX = "kairos_andes_"
__all__ = ["CONTENT_TYPE", "PREFIX", "AndesCollector", "ServerCounters"]
QOE_PERCENTILES = (50, 90, 99)  # exposed as the quantiles 0.5, 0.9, 0.99


@dataclass
class ServerCounters:
    """What only the HTTP layer knows: answers by status, and requests not yet in the engine."""

    http_responses: Counter[int] = field(default_factory=Counter)
    pending: int = 0  # accepted, body being read or validated, not yet handed to the engine
    in_flight: int = 0  # handed to the engine and not yet answered in full


class AndesCollector(SnapshotCollector):
    """Reads `stats()` once per scrape (the engine's) beside the HTTP layer's `server`."""

    prefix = PREFIX

    def __init__(self, stats: Callable[[], EngineStats], server: ServerCounters) -> None:
        self.stats = stats
        self.server = server

    def snapshot(self, out: Families) -> None:
        stats, server = self.stats(), self.server
        out.gauge("requests_running", "Requests in the running batch.", stats.running)
        out.gauge("requests_waiting", "Requests queued in the engine.", stats.waiting)
        out.gauge("requests_swapped", "Preempted requests with KV on the CPU.", stats.swapped)
        out.gauge(
            "requests_pending",
            "Requests accepted by the server, not yet in the engine.",
            server.pending,
        )
        out.gauge(
            "requests_in_flight",
            "Requests handed to the engine, not yet answered.",
            server.in_flight,
        )
        out.gauge("kv_cache_usage_ratio", "Share of GPU KV blocks in use.", stats.kv_usage)
        out.gauge("gpu_blocks_free", "Free GPU KV blocks.", stats.free_gpu_blocks)
        out.gauge("gpu_blocks", "GPU KV blocks in total.", stats.num_gpu_blocks)
        out.gauge("cpu_blocks", "CPU (swap) KV blocks in total.", stats.num_cpu_blocks)
        out.counter("iterations", "Engine iterations run.", stats.iterations)
        out.counter("preemptions", "Requests preempted.", stats.preempted_total)
        out.counter("requests_finished", "Requests finished.", stats.finished)
        out.counter("requests_aborted", "Requests aborted.", stats.aborted)
        out.counter("iteration_seconds", "Wall time spent in engine iterations.", stats.busy_s)
        out.counter(
            "iteration_predicted_seconds",
            "The latency profile's estimate of the same iterations (drift = ratio to the above).",
            stats.predicted_busy_s,
        )
        out.labelled(
            "http_requests",
            "counter",
            "HTTP responses by status code.",
            "code",
            {str(c): n for c, n in sorted(server.http_responses.items())},
        )
        qoe = finite(stats.qoe)
        pct = percentile_summary(qoe, QOE_PERCENTILES)
        out.summary(
            "qoe",
            "QoE of the engine's window of recently finished requests (1 is perfect).",
            {p / 100: pct[percentile_key(p)] for p in QOE_PERCENTILES},
            total=float(qoe.sum()),
            count=int(qoe.size),
        )
