"""The workload of one Andes simulation point: profile, lengths, arrival pattern, speeds.

`SimPoint` describes a point and `build_trace` turns it into requests, deterministically for its
seed. Both live outside `experiments` because the bench client (`kairos bench`) builds the same
requests from them, and a runtime must not import the paper's experiments; `experiments.workload`
adds the simulation of a point on top.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.andes.capacity import LOAD_FACTOR, sustainable_rate
from kairos.andes.latency import DEFAULT_PROFILE, load_profile
from kairos.andes.qoe import sample_speeds
from kairos.sim import RngStreams
from kairos.workloads import (
    CyclicBurst,
    EmpiricalLengths,
    LengthDistribution,
    Poisson,
    Trace,
    dataset_lengths,
    read_azure_csv,
    synthesize,
)
from kairos.workloads.shared import shared_data

MAX_PROMPT = 32768  # longer ShareGPT/Coding prompts than a 32k context are cut, as servers do
MAX_OUTPUT = 4096


@lru_cache(maxsize=8)
def lengths_for(dataset: str) -> LengthDistribution:
    if dataset == "arxiv" and shared_data("arxiv_summarization_lengths.csv").is_file():
        return EmpiricalLengths.from_csv(shared_data("arxiv_summarization_lengths.csv"))
    if dataset == "azure":
        return EmpiricalLengths.from_trace(read_azure_csv(shared_data("azure_llm_conv_1h.csv")))
    return dataset_lengths(dataset, max_prompt=MAX_PROMPT, max_output=MAX_OUTPUT)


@lru_cache(maxsize=32)
def base_rate(profile: str, dataset: str) -> float:
    """The profile's sustainable request rate for the dataset's mean lengths."""
    p, o = lengths_for(dataset).sample(100_000, np.random.default_rng(0))
    return sustainable_rate(load_profile(profile), float(p.mean()), float(o.mean()))


class SimPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str = "andes"
    andes: dict[str, Any] = Field(default_factory=dict)  # AndesConfig overrides
    profile: str = DEFAULT_PROFILE
    dataset: Literal["sharegpt", "arxiv", "coding", "azure"] = "sharegpt"
    arrival: Literal["cyclic_burst", "poisson", "azure_trace"] = "cyclic_burst"
    load_factor: float = Field(LOAD_FACTOR, gt=0)  # average rate / sustainable rate
    rate: float | None = Field(None, gt=0)  # explicit average rate (req/s), overrides load_factor
    intensity: float = Field(2.0, ge=1.0)
    duration: float = Field(0.35, gt=0, lt=1)
    cycle_s: float = Field(1200.0, gt=0)
    span_s: float = Field(1200.0, gt=0)  # arrivals are generated over [0, span_s)
    speeds: Literal["reader", "listener"] = "reader"
    seed: int = 0
    collect: bool = False  # also return per-request values (CDFs) and time series


def average_rate(p: SimPoint) -> float:
    return p.rate if p.rate is not None else p.load_factor * base_rate(p.profile, p.dataset)


def build_trace(p: SimPoint) -> tuple[Trace, np.ndarray]:
    rng = RngStreams(p.seed)
    rate = average_rate(p)
    if p.arrival == "azure_trace":
        trace = read_azure_csv(shared_data("azure_llm_conv_1h.csv")).with_rate(rate)
        trace = trace.window(0.0, p.span_s)
    else:
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
