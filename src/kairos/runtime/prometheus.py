"""`/metrics` through prometheus-client: one collector and one registry per server.

A server's numbers (engine stats, dispatcher counters, the service's tables) move while a
scrape is written, so each server has a `SnapshotCollector` that reads them once per scrape, in
`collect()`, and builds every family from that one reading: a scrape never mixes two moments.
Each server registers it in its own `CollectorRegistry`, never the process-wide default one, so
several servers in one process (the tests start many) do not clash over names. Every name sits
under one prefix per system (`kairos_andes_`, `kairos_orloj_`, `kairos_venn_`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Literal

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

# `generate_latest` writes the classic text format, version 0.0.4: say so to the scraper (newer
# prometheus-client releases call 1.0.0 "latest", which would promise a scraper another format).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

__all__ = ["CONTENT_TYPE", "Families", "SnapshotCollector", "exposition", "registry_for"]


class Families:
    """The metric families of one scrape, every name under `prefix`.

    prometheus-client adds a counter's `_total` suffix itself, so counters are named here
    without it (`iterations` is exposed as `<prefix>iterations_total`).
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.metrics: list[Metric] = []

    def __iter__(self) -> Iterator[Metric]:
        return iter(self.metrics)

    def gauge(self, name: str, help_text: str, value: float) -> None:
        self.metrics.append(GaugeMetricFamily(self.prefix + name, help_text, value=value))

    def counter(self, name: str, help_text: str, value: float) -> None:
        self.metrics.append(CounterMetricFamily(self.prefix + name, help_text, value=value))

    def labelled(
        self,
        name: str,
        kind: Literal["counter", "gauge"],
        help_text: str,
        label: str,
        values: Mapping[str, float],
    ) -> None:
        """One sample per label value, e.g. HTTP answers by status code."""
        cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        family = cls(self.prefix + name, help_text, labels=[label])
        for key, v in values.items():
            family.add_metric([key], v)
        self.metrics.append(family)

    def summary(
        self,
        name: str,
        help_text: str,
        quantiles: Mapping[float, float],
        total: float,
        count: int,
    ) -> None:
        """A summary with precomputed quantiles (`SummaryMetricFamily` takes only sum and
        count, so the quantile samples are added to a plain `Metric`)."""
        full = self.prefix + name
        family = Metric(full, help_text, "summary")
        for q, v in quantiles.items():
            family.add_sample(full, {"quantile": str(q)}, float(v))
        family.add_sample(full + "_sum", {}, float(total))
        family.add_sample(full + "_count", {}, float(count))
        self.metrics.append(family)


class SnapshotCollector(ABC):
    """A server's collector: `snapshot` reads the server once and fills the families."""

    prefix: str

    def collect(self) -> Iterator[Metric]:
        out = Families(self.prefix)
        self.snapshot(out)
        return iter(out)

    def describe(self) -> list[Metric]:
        """Nothing to declare up front: registering must not read a server not yet started."""
        return []

    @abstractmethod
    def snapshot(self, out: Families) -> None:
        """Read the server's state once and add every family to `out`."""


def registry_for(collector: SnapshotCollector) -> CollectorRegistry:
    """A registry of its own holding only `collector`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def exposition(registry: CollectorRegistry) -> str:
    """The body of one scrape."""
    return generate_latest(registry).decode("utf-8")
