"""Device populations: who can train, with which hardware, at what speed.

A collaborative-learning population is a set of edge devices, each with eligibility attributes
(CPU score, RAM, accelerator memory, OS version: what a job's requirement tests) and two speed
factors (compute slowness and bandwidth: what the round timing uses). Real populations resample
measured device models (the AI Benchmark catalogue in `shared/data/aibenchmark_devices.csv`);
synthetic ones draw the attributes from simple distributions for experiments with no data.
Everything is a numpy array so eligibility and timing are vectorised over millions of devices.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from kairos.workloads.shared import shared_data
from kairos.workloads.trace import TraceFormatError

AIBENCHMARK_FILE = "aibenchmark_devices.csv"
SPEC_COLUMNS = ("device", "cpu_ghz", "ram_gb", "fp16_mem_mb", "android_os", "speed_ms")
ATTRIBUTES = ("cpu_ghz", "ram_gb", "fp16_mem_mb", "android_os")


@dataclass(frozen=True)
class DeviceSpecs:
    """A catalogue of device models (one row per model), e.g. the AI Benchmark table."""

    name: tuple[str, ...]
    cpu_ghz: np.ndarray
    ram_gb: np.ndarray
    fp16_mem_mb: np.ndarray
    android_os: np.ndarray
    speed_ms: np.ndarray  # measured inference latency: lower is faster
    source: str = "memory"

    def __len__(self) -> int:
        return len(self.name)


def read_device_specs(path: str | Path) -> DeviceSpecs:
    """Read an AI-Benchmark-style CSV (`device,cpu_ghz,ram_gb,fp16_mem_mb,android_os,speed_ms`).

    Every numeric cell must be a finite, non-negative number (`speed_ms` strictly positive,
    since it becomes a speed factor); the first bad cell raises `TraceFormatError` naming the
    file, line and column, because a silently dropped device skews the eligibility shares.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"device specs not found: {path} (set KAIROS_SHARED to the shared/ folder, "
            "or pass the CSV's path)"
        )
    cols: dict[str, list[float]] = {c: [] for c in SPEC_COLUMNS[1:]}
    names: list[str] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in SPEC_COLUMNS if c not in header]
        if missing:
            raise TraceFormatError(path, 1, missing[0], f"missing column(s) {missing}")
        for row in reader:
            line = reader.line_num
            names.append((row.get("device") or "").strip())
            for col in cols:
                cell = (row.get(col) or "").strip()
                try:
                    value = float(cell)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value) or value < 0 or (col == "speed_ms" and value == 0):
                    want = "a positive number" if col == "speed_ms" else "a number >= 0"
                    raise TraceFormatError(path, line, col, f"expected {want}, got {cell!r}")
                cols[col].append(value)
    if not names:
        raise TraceFormatError(path, 2, None, "no devices in the file")
    arrays = {c: np.asarray(v, dtype=np.float64) for c, v in cols.items()}
    return DeviceSpecs(name=tuple(names), source=str(path), **arrays)


def aibenchmark_specs(path: str | Path | None = None) -> DeviceSpecs:
    """The AI Benchmark catalogue: `path` if given, else the shared data folder's copy."""
    return read_device_specs(path if path is not None else shared_data(AIBENCHMARK_FILE))


@dataclass(frozen=True)
class DevicePopulation:
    """N devices: eligibility attributes and speed factors, one array entry per device.

    `slowness` multiplies the compute time of a task (1 = a typical device); `bandwidth`
    divides its communication time. `capability` is the speed score a device reports at
    check-in (higher is faster); schedulers that tier devices sort by it.
    """

    cpu_ghz: np.ndarray
    ram_gb: np.ndarray
    fp16_mem_mb: np.ndarray
    android_os: np.ndarray
    slowness: np.ndarray
    bandwidth: np.ndarray
    model: np.ndarray  # index into the specs the device was drawn from; -1 if synthetic

    def __post_init__(self) -> None:
        n = len(self.slowness)
        for name in (*ATTRIBUTES, "bandwidth", "model"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"population field {name!r} has the wrong length")
        if n and (np.any(self.slowness <= 0) or np.any(self.bandwidth <= 0)):
            raise ValueError("slowness and bandwidth must be > 0")

    def __len__(self) -> int:
        return len(self.slowness)

    @property
    def capability(self) -> np.ndarray:
        return 1.0 / self.slowness

    def attributes(self, i: int) -> dict[str, float]:
        """One device's eligibility attributes (what a device sends when it checks in)."""
        return {a: float(getattr(self, a)[i]) for a in ATTRIBUTES}


SpeedSource = Literal["independent", "benchmark"]


def population_from_specs(
    specs: DeviceSpecs,
    n: int,
    rng: np.random.Generator,
    speed: SpeedSource = "independent",
    slowness_sigma: float = 0.5,
) -> DevicePopulation:
    """`n` devices whose models are drawn uniformly (with replacement) from `specs`.

    `speed="independent"` draws slowness ~ LogNormal(0, slowness_sigma) per device, independent
    of the hardware, as the Venn artifact does; `"benchmark"` uses the model's measured latency
    normalised by the population median, so faster phones are also the more eligible ones.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    model = rng.integers(0, len(specs), size=n)
    if speed == "independent":
        slowness = rng.lognormal(0.0, slowness_sigma, size=n)
    elif speed == "benchmark":
        lat = specs.speed_ms[model]
        slowness = lat / float(np.median(lat)) if n else lat
    else:
        raise ValueError(f"unknown speed source {speed!r}; use 'independent' or 'benchmark'")
    return DevicePopulation(
        cpu_ghz=specs.cpu_ghz[model],
        ram_gb=specs.ram_gb[model],
        fp16_mem_mb=specs.fp16_mem_mb[model],
        android_os=specs.android_os[model],
        slowness=np.asarray(slowness, dtype=np.float64),
        bandwidth=np.ones(n),
        model=model.astype(np.int64),
    )


def synthetic_population(
    n: int,
    rng: np.random.Generator,
    slowness_sigma: float = 0.5,
    bandwidth_sigma: float = 0.0,
) -> DevicePopulation:
    """`n` devices with attributes from parametric distributions (no data needed).

    The marginals roughly follow the AI Benchmark catalogue (median CPU score 6, RAM in
    {2..16} GB, accelerator memory growing with RAM, Android 6-14); use it for experiments that
    need a population of a different shape or size than the measured one.
    """
    ram_choices = np.array([2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0])
    ram_p = np.array([0.07, 0.09, 0.21, 0.19, 0.28, 0.12, 0.04])
    ram = rng.choice(ram_choices, size=n, p=ram_p / ram_p.sum())
    cpu = rng.lognormal(np.log(6.0), 0.7, size=n)
    mem = np.clip(ram * 150.0 * rng.lognormal(0.0, 0.3, size=n), 100.0, 2800.0)
    os_version = rng.integers(6, 15, size=n).astype(np.float64)
    return DevicePopulation(
        cpu_ghz=cpu,
        ram_gb=ram,
        fp16_mem_mb=mem,
        android_os=os_version,
        slowness=rng.lognormal(0.0, slowness_sigma, size=n),
        bandwidth=rng.lognormal(0.0, bandwidth_sigma, size=n) if bandwidth_sigma else np.ones(n),
        model=np.full(n, -1, dtype=np.int64),
    )
