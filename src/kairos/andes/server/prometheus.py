"""`/metrics` in the Prometheus text exposition format (version 0.0.4), without a client library.

The numbers come from one consistent `EngineStats` snapshot plus the server's own counters, so
a scrape never mixes two moments of the engine. Names are prefixed `kairos_andes_`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from kairos.andes.engine.api import EngineStats

PREFIX = "kairos_andes_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
QOE_QUANTILES = (0.5, 0.9, 0.99)


@dataclass
class ServerCounters:
    """What only the HTTP layer knows: answers by status, and requests not yet in the engine."""

    http_responses: Counter[int] = field(default_factory=Counter)
    pending: int = 0  # accepted, body being read or validated, not yet handed to the engine
    in_flight: int = 0  # handed to the engine and not yet answered in full


def _value(x: float) -> str:
    if isinstance(x, bool):
        return str(int(x))
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return repr(float(x))


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    esc = {
        k: v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        for k, v in labels.items()
    }
    return "{" + ",".join(f'{k}="{v}"' for k, v in esc.items()) + "}"


def _family(
    name: str, kind: str, help_text: str, samples: Iterable[tuple[str, dict[str, str], float]]
) -> list[str]:
    """HELP and TYPE lines, then one line per (suffix, labels, value) sample."""
    full = PREFIX + name
    lines = [f"# HELP {full} {help_text}", f"# TYPE {full} {kind}"]
    lines += [f"{full}{suffix}{_labels(labels)} {_value(v)}" for suffix, labels, v in samples]
    return lines


def _gauge(name: str, help_text: str, value: float) -> list[str]:
    return _family(name, "gauge", help_text, [("", {}, value)])


def _counter(name: str, help_text: str, value: float) -> list[str]:
    return _family(name, "counter", help_text, [("_total", {}, value)])


def render_metrics(stats: EngineStats, server: ServerCounters) -> str:
    """The whole exposition text for one scrape."""
    lines: list[str] = []
    lines += _gauge("requests_running", "Requests in the running batch.", stats.running)
    lines += _gauge("requests_waiting", "Requests queued in the engine.", stats.waiting)
    lines += _gauge("requests_swapped", "Preempted requests with KV on the CPU.", stats.swapped)
    lines += _gauge(
        "requests_pending",
        "Requests accepted by the server, not yet in the engine.",
        server.pending,
    )
    lines += _gauge(
        "requests_in_flight", "Requests handed to the engine, not yet answered.", server.in_flight
    )
    lines += _gauge("kv_cache_usage_ratio", "Share of GPU KV blocks in use.", stats.kv_usage)
    lines += _gauge("gpu_blocks_free", "Free GPU KV blocks.", stats.free_gpu_blocks)
    lines += _gauge("gpu_blocks", "GPU KV blocks in total.", stats.num_gpu_blocks)
    lines += _gauge("cpu_blocks", "CPU (swap) KV blocks in total.", stats.num_cpu_blocks)
    lines += _counter("iterations", "Engine iterations run.", stats.iterations)
    lines += _counter("preemptions", "Requests preempted.", stats.preempted_total)
    lines += _counter("requests_finished", "Requests finished.", stats.finished)
    lines += _counter("requests_aborted", "Requests aborted.", stats.aborted)
    lines += _counter("iteration_seconds", "Wall time spent in engine iterations.", stats.busy_s)
    lines += _counter(
        "iteration_predicted_seconds",
        "The latency profile's estimate of the same iterations (drift = ratio to the above).",
        stats.predicted_busy_s,
    )
    lines += _family(
        "http_requests",
        "counter",
        "HTTP responses by status code.",
        [("_total", {"code": str(c)}, n) for c, n in sorted(server.http_responses.items())],
    )
    qoe = np.asarray(stats.qoe, dtype=np.float64)
    quantiles = np.quantile(qoe, QOE_QUANTILES) if qoe.size else [math.nan] * len(QOE_QUANTILES)
    samples: list[tuple[str, dict[str, str], float]] = [
        ("", {"quantile": str(q)}, float(v)) for q, v in zip(QOE_QUANTILES, quantiles, strict=True)
    ]
    samples += [("_sum", {}, float(qoe.sum())), ("_count", {}, int(qoe.size))]
    lines += _family(
        "qoe",
        "summary",
        "QoE of the engine's window of recently finished requests (1 is perfect).",
        samples,
    )
    return "\n".join(lines) + "\n"
