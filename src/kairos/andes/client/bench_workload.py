"""Workloads for `kairos bench`: arrival offsets, prompts, output lengths and QoE parameters.

Synthetic arrivals (cyclic burst, Poisson) and their lengths come from the simulator's own
`build_trace`, so a bench run and a simulation with the same seed see the same requests. Trace
files are read with the shared readers, then scaled (`time_scale`, or `rate` for a mean rate),
cut to `[trace_start_s, trace_start_s + duration_s)` and to the first `num_requests`. Lengths are
scaled (`prompt_scale`, `output_scale`), rounded, kept >= 1 and clipped (`max_*_tokens`) so that
a small CPU model can take the load. QoE: speeds from the reader/listener profile, TTFT target
`max(prompt_tokens / prefill_tokens_per_s, 1 s)`, unless fixed by `qoe_ttft_s`/`qoe_tokens_per_s`.

Prompt text. Servers tokenize for themselves, so prompts are synthesized to roughly the wanted
length: words of random lowercase ASCII letters from a seeded generator, separated by single
spaces, `round(tokens * chars_per_token)` characters in all. With a byte-level tokenizer (our
built-in engine: one token per byte) `chars_per_token = 1` gives exactly the wanted number of
prompt tokens (plus whatever special tokens or chat template the server adds). BPE tokenizers
split random letters into pieces of 2-4 characters; measure once (the server's
`usage.prompt_tokens`, recorded per request) and set `chars_per_token` from it. Every prompt is
different, so prefix caching does not shorten prefills.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from pydantic import ValidationError

from kairos.sim import RngStreams
from kairos.workloads import Trace


class WorkloadOptions(Protocol):
    """What building a workload reads of a `bench.BenchConfig`.

    Declared here rather than importing `BenchConfig`, since `bench` imports this module.
    """

    @property
    def workload(self) -> str: ...
    @property
    def trace(self) -> Path | None: ...
    @property
    def rate(self) -> float | None: ...
    @property
    def time_scale(self) -> float | None: ...
    @property
    def intensity(self) -> float: ...
    @property
    def burst_duration(self) -> float: ...
    @property
    def cycle_s(self) -> float | None: ...
    @property
    def duration_s(self) -> float | None: ...
    @property
    def trace_start_s(self) -> float: ...
    @property
    def num_requests(self) -> int | None: ...
    @property
    def dataset(self) -> Literal["sharegpt", "arxiv", "coding", "azure"]: ...
    @property
    def prompt_scale(self) -> float: ...
    @property
    def output_scale(self) -> float: ...
    @property
    def max_prompt_tokens(self) -> int | None: ...
    @property
    def max_output_tokens(self) -> int | None: ...
    @property
    def chars_per_token(self) -> float: ...
    @property
    def profile(self) -> Literal["reader", "listener"]: ...
    @property
    def prefill_tokens_per_s(self) -> float: ...
    @property
    def qoe_ttft_s(self) -> float | None: ...
    @property
    def qoe_tokens_per_s(self) -> float | None: ...
    @property
    def seed(self) -> int: ...


class BenchError(RuntimeError):
    """A problem the user can fix (bad input, unreachable server); the message is one line."""


@dataclass(frozen=True)
class BenchRequest:
    index: int
    arrival_s: float
    prompt: str
    prompt_tokens: int
    max_tokens: int
    ttft_s: float
    tokens_per_s: float


def synth_prompt(tokens: int, chars_per_token: float, rng: np.random.Generator) -> str:
    """Random lowercase words, `round(tokens * chars_per_token)` ASCII characters (at least 1)."""
    n = max(1, round(tokens * chars_per_token))
    text = rng.integers(ord("a"), ord("z") + 1, size=n, dtype=np.uint8)
    space = rng.random(n) < 1 / 6  # words of about 5 letters
    space[0] = space[-1] = False
    space[1:] &= ~space[:-1]  # never two spaces in a row
    text[space] = ord(" ")
    return text.tobytes().decode("ascii")


def _trace_and_speeds(cfg: WorkloadOptions) -> tuple[Trace, np.ndarray]:
    from kairos.andes.qoe import sample_speeds
    from kairos.andes.workload import SimPoint, build_trace
    from kairos.workloads import read_azure_csv, read_burstgpt_csv
    from kairos.workloads.shared import shared_data

    if cfg.workload in ("cyclic", "poisson"):
        rate = cfg.rate or 1.0
        horizon = cfg.duration_s or (2.0 * cfg.num_requests / rate + 10 if cfg.num_requests else 60)
        point = SimPoint(
            arrival="cyclic_burst" if cfg.workload == "cyclic" else "poisson",
            rate=rate,
            intensity=cfg.intensity,
            duration=cfg.burst_duration,
            cycle_s=cfg.cycle_s or horizon,
            span_s=horizon,
            dataset=cfg.dataset,
            speeds=cfg.profile,
            seed=cfg.seed,
        )
        trace, speeds = build_trace(point)
        n = cfg.num_requests or len(trace)
        return trace.head(n), speeds[:n]
    path = cfg.trace or shared_data("azure_llm_conv_1h.csv")
    trace = read_azure_csv(path) if cfg.workload == "azure" else read_burstgpt_csv(path)
    if cfg.rate is not None:
        trace = trace.with_rate(cfg.rate)
    else:
        trace = trace.scaled(cfg.time_scale or 1.0)
    end = cfg.trace_start_s + cfg.duration_s if cfg.duration_s else math.inf
    trace = trace.window(cfg.trace_start_s, end)
    trace = trace.head(cfg.num_requests or len(trace))
    return trace, sample_speeds(cfg.profile, len(trace), RngStreams(cfg.seed).stream("speeds"))


def _clip(values: np.ndarray, scale: float, cap: int | None) -> np.ndarray:
    out = np.maximum(np.rint(values * scale).astype(np.int64), 1)
    return np.minimum(out, cap) if cap is not None else out


def build_workload(cfg: WorkloadOptions) -> list[BenchRequest]:
    """The requests of a run, deterministic for the config's seed."""
    from kairos.andes.qoe import ttft_target
    from kairos.workloads import TraceFormatError

    try:
        trace, speeds = _trace_and_speeds(cfg)
    except (FileNotFoundError, TraceFormatError, ValidationError, ValueError) as exc:
        raise BenchError(" ".join(str(exc).split())) from None
    if len(trace) == 0:
        raise BenchError(f"the {cfg.workload} workload has no requests; widen the window or rate")
    prompt = _clip(trace.prompt_tokens, cfg.prompt_scale, cfg.max_prompt_tokens)
    output = _clip(trace.output_tokens, cfg.output_scale, cfg.max_output_tokens)
    ttft = ttft_target(prompt, cfg.prefill_tokens_per_s)
    if cfg.qoe_ttft_s is not None:
        ttft = np.full(len(trace), cfg.qoe_ttft_s)
    if cfg.qoe_tokens_per_s is not None:
        speeds = np.full(len(trace), cfg.qoe_tokens_per_s)
    rng = RngStreams(cfg.seed).stream("prompts")
    return [
        BenchRequest(
            index=i,
            arrival_s=float(trace.arrivals[i]),
            prompt=synth_prompt(int(prompt[i]), cfg.chars_per_token, rng),
            prompt_tokens=int(prompt[i]),
            max_tokens=int(output[i]),
            ttft_s=float(ttft[i]),
            tokens_per_s=float(speeds[i]),
        )
        for i in range(len(trace))
    ]
