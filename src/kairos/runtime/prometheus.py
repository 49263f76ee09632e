"""The Prometheus text exposition format (version 0.0.4), without a client library.

Each server renders one consistent snapshot of its state per scrape with an `Exposition`:
`HELP` and `TYPE` lines per family, then its samples, every name under one prefix
(`kairos_andes_`, `kairos_orloj_`, ...).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Sample = tuple[str, Mapping[str, str], float]  # (name suffix, labels, value)


def format_value(x: float) -> str:
    if isinstance(x, bool):
        return str(int(x))
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return repr(float(x))


def format_labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    esc = {
        k: v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        for k, v in labels.items()
    }
    return "{" + ",".join(f'{k}="{v}"' for k, v in esc.items()) + "}"


class Exposition:
    """Collects metric families under `prefix`; `text()` is the body of one scrape."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> None:
        """HELP and TYPE lines, then one line per (suffix, labels, value) sample."""
        full = self.prefix + name
        self.lines += [f"# HELP {full} {help_text}", f"# TYPE {full} {kind}"]
        self.lines += [
            f"{full}{suffix}{format_labels(labels)} {format_value(v)}"
            for suffix, labels, v in samples
        ]

    def gauge(self, name: str, help_text: str, value: float) -> None:
        self.family(name, "gauge", help_text, [("", {}, value)])

    def counter(self, name: str, help_text: str, value: float) -> None:
        self.family(name, "counter", help_text, [("_total", {}, value)])

    def labelled(
        self, name: str, kind: str, help_text: str, label: str, values: Mapping[str, float]
    ) -> None:
        """One sample per label value (counters get the `_total` suffix)."""
        suffix = "_total" if kind == "counter" else ""
        self.family(name, kind, help_text, [(suffix, {label: k}, v) for k, v in values.items()])

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
