"""Recorded request sequences: (arrival, application, solo latency), replayed for every system.

The paper draws inputs once, records the (arrival time, input) sequence and replays it for
every system and run, so differences between systems come from scheduling alone. A `Recording`
is that sequence; `record` builds one from a workload and a seed, and CSV files
(`arrival_ms,app,solo_ms`) let a user replay their own.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kairos.orloj import arrivals
from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policy import Request
from kairos.orloj.workloads import Workload, capacity_per_ms
from kairos.sim import RngStreams
from kairos.workloads import TraceFormatError

COLUMNS = ("arrival_ms", "app", "solo_ms")


@dataclass(frozen=True)
class Recording:
    arrival_ms: np.ndarray
    app: np.ndarray  # index into app_names
    solo_ms: np.ndarray  # hidden ground truth: only the simulator's worker reads it
    app_names: tuple[str, ...]
    meta: dict[str, float | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.arrival_ms)
        if len(self.app) != n or len(self.solo_ms) != n:
            raise ValueError("arrival_ms, app and solo_ms must have equal length")
        if n and (np.any(np.diff(self.arrival_ms) < 0) or self.arrival_ms[0] < 0):
            raise ValueError("arrivals must be non-negative and sorted")
        if n and (np.any(self.solo_ms <= 0) or not np.all(np.isfinite(self.solo_ms))):
            raise ValueError("solo latencies must be finite and > 0")
        if n and (self.app.min() < 0 or self.app.max() >= len(self.app_names)):
            raise ValueError("app indices must index app_names")

    def __len__(self) -> int:
        return len(self.arrival_ms)

    @property
    def rate_per_ms(self) -> float:
        span = float(self.arrival_ms[-1] - self.arrival_ms[0]) if len(self) > 1 else 0.0
        return (len(self) - 1) / span if span > 0 else float("nan")

    def requests(self, slo_ms: float) -> list[Request]:
        """Fresh `Request` objects (one run's worth; the simulator writes outcomes into them)."""
        if not slo_ms > 0:
            raise ValueError(f"slo_ms must be > 0, got {slo_ms}")
        names = self.app_names
        return [
            Request(
                request_id=i,
                app=names[int(a)],
                release=float(t),
                slo=float(slo_ms),
                solo_ms=float(s),
            )
            for i, (t, a, s) in enumerate(zip(self.arrival_ms, self.app, self.solo_ms, strict=True))
        ]

    def head(self, n: int) -> Recording:
        return Recording(
            self.arrival_ms[:n], self.app[:n], self.solo_ms[:n], self.app_names, dict(self.meta)
        )

    def save_csv(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(COLUMNS)
            for t, a, s in zip(self.arrival_ms, self.app, self.solo_ms, strict=True):
                w.writerow([repr(float(t)), self.app_names[int(a)], repr(float(s))])
        return path

    @staticmethod
    def load_csv(path: str | Path) -> Recording:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"recording not found: {path}")
        times: list[float] = []
        apps: list[str] = []
        solos: list[float] = []
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or any(c not in reader.fieldnames for c in COLUMNS):
                raise TraceFormatError(path, 1, None, f"expected the columns {list(COLUMNS)}")
            for row in reader:
                try:
                    t, s = float(row["arrival_ms"]), float(row["solo_ms"])
                except (TypeError, ValueError):
                    raise TraceFormatError(
                        path, reader.line_num, None, "arrival_ms and solo_ms must be numbers"
                    ) from None
                if not (np.isfinite(t) and t >= 0 and np.isfinite(s) and s > 0):
                    raise TraceFormatError(
                        path, reader.line_num, None, "need arrival_ms >= 0 and solo_ms > 0"
                    )
                times.append(t)
                apps.append(row["app"].strip())
                solos.append(s)
        names = tuple(dict.fromkeys(apps))
        order = np.argsort(np.asarray(times), kind="stable")
        index = np.asarray([names.index(a) for a in apps], dtype=np.int64)
        return Recording(
            np.asarray(times)[order],
            index[order],
            np.asarray(solos)[order],
            names,
            {"source": str(path)},
        )


def record(
    workload: Workload,
    n: int,
    seed: int,
    model: BatchLatencyModel,
    *,
    rho: float = 0.8,
    arrival: arrivals.ArrivalKind = "bursty",
    burst_sigma: float = 0.5,
    trace_path: str | Path | None = None,
) -> Recording:
    """`n` requests of `workload` at mean load `rho` of its capacity C = 16/E[g_16(max)]."""
    if rho <= 0:
        raise ValueError(f"rho must be > 0, got {rho}")
    rng = RngStreams(seed)
    rate = rho * capacity_per_ms(workload, model)
    times = arrivals.generate(
        arrival, n, rate, rng.stream("arrivals"), sigma=burst_sigma, trace_path=trace_path
    )
    app, solo = workload.sample(times.size, rng.stream("solo"))
    meta: dict[str, float | str] = {
        "workload": workload.name,
        "seed": seed,
        "rho": rho,
        "rate_per_ms": rate,
        "arrival": arrival,
        "p99_ms": workload.p99_ms,
    }
    return Recording(times, app.astype(np.int64), solo, workload.app_names, meta)
