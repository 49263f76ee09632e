"""Job traces: the E1 generator of spec 4.6 and CSV read/write.

The paper's 100-job trace is not published; spec 4.6 resolves it as a seeded generator whose
shape matches what Table 2.1 implies (mean solo duration about 3 min, a heavy backlog):
workloads uniform over the training workloads that fit in C, durations heavy-tailed in
{1, 5, 30} min with probabilities {0.80, 0.15, 0.05}, Poisson arrivals 18 s apart on average
(optionally bursty: one rate per 1-min slot, lognormal around the mean). A job is a fixed
number of iterations, duration / solo t_iter. `time_scale` shrinks durations and gaps alike
(the same trace shape in fewer iterations, for quick runs).

Trace files use the release's columns: `job_id, model_name, iterations, submit_time, duration`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kairos.salus.profile import GIB, Profile, ProfileError

TRACE_COLUMNS = ("job_id", "model_name", "iterations", "submit_time", "duration")


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace: `duration` is its solo run time (s), `iterations * t_iter`."""

    job_id: int
    workload: str
    iterations: int
    submit_time: float
    duration: float


class E1Trace(BaseModel):
    """The E1 generator's parameters (spec 4.6), every one reported with the results."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    jobs: int = Field(100, ge=1, description="jobs in the trace")
    mean_interarrival_s: float = Field(18.0, gt=0, description="Poisson mean gap")
    durations_min: tuple[float, ...] = (1.0, 5.0, 30.0)
    probabilities: tuple[float, ...] = (0.80, 0.15, 0.05)
    bursty: bool = Field(False, description="one rate per slot, lognormal around the mean")
    burst_sigma: float = Field(0.5, ge=0)
    slot_s: float = Field(60.0, gt=0)
    time_scale: float = Field(1.0, gt=0, le=1, description="durations and gaps x this")
    capacity_gib: float = Field(16.0, gt=0, description="workloads above C are skipped")

    @model_validator(mode="after")
    def _shape(self) -> E1Trace:
        if len(self.durations_min) != len(self.probabilities) or not self.durations_min:
            raise ValueError("durations_min and probabilities must have the same length > 0")
        if any(p < 0 for p in self.probabilities) or not math.isclose(sum(self.probabilities), 1):
            raise ValueError(f"probabilities must be >= 0 and sum to 1, got {self.probabilities}")
        if any(d <= 0 for d in self.durations_min):
            raise ValueError("durations must be > 0 min")
        return self


def training_workloads(profiles: Mapping[str, Profile], capacity: int) -> list[str]:
    """The measured (CSV) workloads that fit in `capacity`, in name order."""
    return sorted(n for n, p in profiles.items() if p.source == "csv" and p.peak <= capacity)


def e1_trace(cfg: E1Trace, profiles: Mapping[str, Profile], seed: int) -> list[TraceJob]:
    """The seeded E1 trace. Draws come from one generator in a fixed order (workload, duration,
    gap per job), so a seed names a trace."""
    names = training_workloads(profiles, int(cfg.capacity_gib * GIB))
    if not names:
        raise ValueError("no training workload fits the capacity")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(names), cfg.jobs)
    minutes = rng.choice(np.asarray(cfg.durations_min), size=cfg.jobs, p=cfg.probabilities)
    gaps = rng.exponential(1.0, cfg.jobs)
    n_slots = cfg.jobs * 4 + 16
    slot_rates = np.exp(rng.normal(-(cfg.burst_sigma**2) / 2, cfg.burst_sigma, n_slots))
    slot = cfg.slot_s * cfg.time_scale
    t, out = 0.0, []
    for i in range(cfg.jobs):
        mean_gap = cfg.mean_interarrival_s * cfg.time_scale
        if cfg.bursty:  # this slot's rate is the mean rate x a lognormal factor of mean 1
            mean_gap /= slot_rates[min(int(t // slot), n_slots - 1)]
        t = t + gaps[i] * mean_gap if i else 0.0
        prof = profiles[names[picks[i]]]
        iterations = max(1, round(minutes[i] * 60 * cfg.time_scale / prof.t_iter))
        out.append(TraceJob(i, prof.workload, iterations, float(t), iterations * prof.t_iter))
    return out


def write_trace(path: Path, trace: Sequence[TraceJob]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(TRACE_COLUMNS)
        for j in trace:
            w.writerow(
                [
                    j.job_id,
                    j.workload,
                    j.iterations,
                    repr(float(j.submit_time)),
                    repr(float(j.duration)),
                ]
            )


def _cell(
    path: Path, row: int, rec: Mapping[str, str | None], col: str, kind: type, lo: float
) -> float:
    """One validated cell; a bad one is reported by file, row and column."""
    raw = (rec.get(col) or "").strip()
    try:
        value = kind(raw)
    except ValueError:
        raise ProfileError(
            f"{path}: row {row}: column {col!r}: {raw!r} is not a {kind.__name__}"
        ) from None
    if not (math.isfinite(value) and value >= lo):
        raise ProfileError(f"{path}: row {row}: column {col!r}: {raw!r} must be >= {lo}")
    return float(value)


def read_trace(path: Path, profiles: Mapping[str, Profile] | None = None) -> list[TraceJob]:
    """A trace file, validated cell by cell (the message names file, row and column); with
    `profiles`, every model_name must be a known workload."""
    if not path.exists():
        raise ProfileError(f"trace not found: {path}")
    out: list[TraceJob] = []
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in TRACE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ProfileError(f"{path}: header lacks {missing}; need {list(TRACE_COLUMNS)}")
        for row, rec in enumerate(reader, start=1):
            name = (rec.get("model_name") or "").strip()
            if not name or (profiles is not None and name not in profiles):
                raise ProfileError(f"{path}: row {row}: column 'model_name': unknown {name!r}")
            out.append(
                TraceJob(
                    int(_cell(path, row, rec, "job_id", int, 0)),
                    name,
                    int(_cell(path, row, rec, "iterations", int, 1)),
                    _cell(path, row, rec, "submit_time", float, 0.0),
                    _cell(path, row, rec, "duration", float, 0.0),
                )
            )
    ids = [j.job_id for j in out]
    if len(set(ids)) != len(ids):
        raise ProfileError(f"{path}: column 'job_id' repeats an id")
    return out
