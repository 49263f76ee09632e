"""The workload of one Andes simulation point: profile, lengths, arrival pattern, speeds.

`SimPoint` describes a point and `build_trace` turns it into requests, deterministically for its
seed. Both live outside `experiments` because the bench client (`kairos bench`) builds the same
requests from them, and a runtime must not import the paper's experiments; `experiments.workload`
adds the simulation of a point on top.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Self

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from kairos.andes.capacity import LOAD_FACTOR, sustainable_rate
from kairos.andes.latency import DEFAULT_PROFILE, PROFILES, load_profile
from kairos.andes.operating_point import trace_sustainable_rate
from kairos.andes.qoe import sample_speeds
from kairos.cli_utils import Settings
from kairos.sim import RngStreams
from kairos.workloads import (
    CyclicBurst,
    EmpiricalLengths,
    LengthDistribution,
    Poisson,
    Trace,
    dataset_lengths,
    read_azure_csv,
    read_trace,
    synthesize,
)
from kairos.workloads.shared import shared_data

MAX_PROMPT = 32768  # longer ShareGPT/Coding prompts than a 32k context are cut, as servers do
MAX_OUTPUT = 4096
AZURE_CONV = "azure_llm_conv_1h.csv"  # the shared trace E4 replays by default


@lru_cache(maxsize=8)
def lengths_for(dataset: str) -> LengthDistribution:
    if dataset == "arxiv" and shared_data("arxiv_summarization_lengths.csv").is_file():
        return EmpiricalLengths.from_csv(shared_data("arxiv_summarization_lengths.csv"))
    if dataset == "azure":
        return EmpiricalLengths.from_trace(read_azure_csv(shared_data(AZURE_CONV)))
    return dataset_lengths(dataset, max_prompt=MAX_PROMPT, max_output=MAX_OUTPUT)


@lru_cache(maxsize=32)
def base_rate(profile: str, dataset: str) -> float:
    """The profile's sustainable request rate for the dataset's mean lengths."""
    p, o = lengths_for(dataset).sample(100_000, np.random.default_rng(0))
    return sustainable_rate(load_profile(profile), float(p.mean()), float(o.mean()))


@lru_cache(maxsize=8)
def _read_trace(path: str, _mtime_ns: int, _size: int) -> Trace:
    return read_trace(path)


def trace_file(path: str) -> Trace:
    """A trace CSV (Azure/Splitwise or BurstGPT), read once per version of the file."""
    st = Path(path).stat()
    return _read_trace(str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=32)
def _replay_rate(profile: str, path: str | None, _mtime_ns: int, _size: int) -> float:
    t = trace_file(path) if path is not None else read_azure_csv(shared_data(AZURE_CONV))
    return trace_sustainable_rate(load_profile(profile), t.prompt_tokens, t.output_tokens)


def trace_rate(profile: str, path: str | None) -> float:
    """The profile's sustainable request rate for a replayed trace's own length distribution
    (`kairos.andes.operating_point`); `path` None is the shared Azure conversation trace."""
    st = (Path(path) if path is not None else shared_data(AZURE_CONV)).stat()
    return _replay_rate(profile, path, st.st_mtime_ns, st.st_size)


class SimPoint(Settings):
    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str = "andes"
    andes: dict[str, Any] = Field(default_factory=dict)  # AndesConfig overrides
    profile: str = DEFAULT_PROFILE
    dataset: Literal["sharegpt", "arxiv", "coding", "azure"] = "sharegpt"
    # "trace" replays the CSV at `trace` (arrivals and lengths); "azure_trace" the shared one
    arrival: Literal["cyclic_burst", "poisson", "azure_trace", "trace"] = "cyclic_burst"
    trace: str | None = None  # a trace CSV, for arrival "trace"
    # average rate / sustainable rate; None replays a trace at its recorded rate
    load_factor: float | None = Field(LOAD_FACTOR, gt=0)
    rate: float | None = Field(None, gt=0)  # explicit average rate (req/s), overrides load_factor
    intensity: float = Field(2.0, ge=1.0)
    duration: float = Field(0.35, gt=0, lt=1)
    cycle_s: float = Field(1200.0, gt=0)
    # arrivals are generated (or a trace is cut) over [0, span_s); None: the whole trace
    span_s: float | None = Field(1200.0, gt=0)
    speeds: Literal["reader", "listener"] = "reader"
    seed: int = 0
    collect: bool = False  # also return per-request values (CDFs) and time series

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        replay = self.arrival in ("azure_trace", "trace")
        if (self.arrival == "trace") != (self.trace is not None):
            raise ValueError(
                "a trace path goes with arrival 'trace', and arrival 'trace' needs one"
            )
        if self.trace is not None and not Path(self.trace).is_file():
            raise ValueError(f"trace file not found: {self.trace}")
        if not replay and self.load_factor is None and self.rate is None:
            raise ValueError("a generated workload needs a load_factor or a rate")
        if not replay and self.span_s is None:
            raise ValueError("a generated workload needs span_s")
        return self

    def input_files(self) -> list[Path]:
        """Every file this point reads, so a sweep's cache key can hash their contents."""
        files = [Path(self.trace)] if self.trace else []
        if self.arrival == "azure_trace" or self.dataset == "azure":
            files.append(shared_data("azure_llm_conv_1h.csv"))
        if self.dataset == "arxiv":
            files.append(shared_data("arxiv_summarization_lengths.csv"))
        if self.profile not in PROFILES:
            files.append(Path(self.profile))
        return [f for f in files if f.is_file()]


def _replayed(p: SimPoint) -> Trace:
    if p.trace is not None:
        return trace_file(p.trace)
    return read_azure_csv(shared_data(AZURE_CONV))


def average_rate(p: SimPoint) -> float:
    if p.rate is not None:
        return p.rate
    if p.load_factor is None:
        return _replayed(p).mean_rate
    if p.arrival in ("azure_trace", "trace"):
        return p.load_factor * trace_rate(p.profile, p.trace)
    return p.load_factor * base_rate(p.profile, p.dataset)


def build_trace(p: SimPoint) -> tuple[Trace, np.ndarray]:
    rng = RngStreams(p.seed)
    rate = average_rate(p)
    if p.arrival in ("azure_trace", "trace"):
        trace = _replayed(p)
        if p.rate is not None or p.load_factor is not None:
            trace = trace.with_rate(rate)
        if p.span_s is not None:
            trace = trace.window(0.0, p.span_s)
    else:
        assert p.span_s is not None  # checked by the model
        process = (
            Poisson(rate=rate)
            if p.arrival == "poisson"
            else CyclicBurst(
                rate=rate, intensity=p.intensity, duration=p.duration, cycle_s=p.cycle_s
            )
        )
        arrivals = process.sample(p.span_s, rng.stream("arrivals"))
        trace = synthesize(arrivals, lengths_for(p.dataset), rng.stream("lengths"))
    speeds = sample_speeds(p.speeds, len(trace), rng.stream("speeds"))
    return trace, speeds
