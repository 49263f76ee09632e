"""When Orloj's requests arrive: bursty Poisson, the Azure Functions trace shape, or a replay.

The paper drives every system with the Azure Functions trace (Shahrad et al., ATC'20) scaled to
the system's capacity. That file is not shipped here, so the default is its stand-in from the
spec: one Poisson rate per 1-s slot, drawn from a mean-preserving lognormal (sigma 0.5), which
gives bursts with a coefficient of variation above 1. When a user has the trace, its per-minute
invocation counts shape the slot rates instead. The shared Azure LLM trace's arrival times can
also be replayed. All times are in ms; the per-slot arrivals come from `kairos.workloads.Poisson`.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Literal

import numpy as np

from kairos.workloads import Poisson, TraceFormatError, TraceReplay, read_azure_csv

ArrivalKind = Literal["bursty", "poisson", "azure_functions", "azure_llm"]
AZURE_FUNCTIONS_KEYS = ("HashOwner", "HashApp", "HashFunction", "Trigger")


def lognormal_slot_rates(
    mean_rate: float, n_slots: int, sigma: float, rng: np.random.Generator
) -> np.ndarray:
    """Per-slot rates whose expectation is `mean_rate` (lognormal with mean 1, times the mean)."""
    return mean_rate * np.exp(sigma * rng.standard_normal(n_slots) - sigma**2 / 2)


def piecewise_poisson(
    rates: np.ndarray, slot_ms: float, rng: np.random.Generator, start_ms: float = 0.0
) -> np.ndarray:
    """Poisson arrivals with rate `rates[i]` (per ms) during slot i; sorted times in ms."""
    parts = [
        Poisson(rate=float(r)).sample(slot_ms, rng) + start_ms + i * slot_ms
        for i, r in enumerate(rates)
        if r > 0
    ]
    return np.concatenate(parts) if parts else np.empty(0)


def _first_n(
    n: int, rate_per_ms: float, slot_ms: float, draw_rates: object, rng: np.random.Generator
) -> np.ndarray:
    """Generate slot after slot (in chunks) until `n` arrivals exist; keep the first `n`."""
    if n <= 0:
        return np.empty(0)
    if rate_per_ms <= 0:
        raise ValueError(f"arrival rate must be > 0, got {rate_per_ms}")
    out: list[np.ndarray] = []
    have, start, chunk = 0, 0.0, max(8, int(1.2 * n / (rate_per_ms * slot_ms)) + 1)
    while have < n:
        rates = draw_rates(chunk)  # type: ignore[operator]
        times = piecewise_poisson(rates, slot_ms, rng, start)
        out.append(times)
        have += times.size
        start += chunk * slot_ms
    return np.concatenate(out)[:n]


def bursty(
    n: int, rate_per_ms: float, rng: np.random.Generator, sigma: float = 0.5, slot_ms: float = 1e3
) -> np.ndarray:
    """The first `n` arrivals of the lognormal-slot process (sigma 0 is plain Poisson)."""
    return _first_n(
        n, rate_per_ms, slot_ms, lambda k: lognormal_slot_rates(rate_per_ms, k, sigma, rng), rng
    )


def shaped_by_counts(
    counts: np.ndarray,
    n: int,
    rate_per_ms: float,
    rng: np.random.Generator,
    slot_ms: float = 1e3,
) -> np.ndarray:
    """Slot i's rate is proportional to counts[i] (cycled), scaled to a mean of `rate_per_ms`:
    the trace's shape, compressed to the system's capacity as the paper does."""
    c = np.asarray(counts, dtype=float)
    if c.size == 0 or c.sum() <= 0:
        raise ValueError("the invocation counts are all zero")
    rel = c / c.mean()
    pos = [0]

    def draw(k: int) -> np.ndarray:
        idx = (pos[0] + np.arange(k)) % rel.size
        pos[0] += k
        return rate_per_ms * rel[idx]

    return _first_n(n, rate_per_ms, slot_ms, draw, rng)


def read_azure_functions(path: str | Path, function: str | None = None) -> np.ndarray:
    """Per-minute invocation counts from an Azure Functions 2019 file
    (`invocations_per_function_md.anon.d??.csv`: HashOwner, HashApp, HashFunction, Trigger,
    then one column per minute "1".."1440"), summed over all functions or one `HashFunction`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"trace file not found: {path}")
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = [h.strip() for h in next(reader, [])]
        missing = [k for k in AZURE_FUNCTIONS_KEYS if k not in header]
        minutes = [i for i, h in enumerate(header) if h.isdigit()]
        if missing or not minutes:
            raise TraceFormatError(
                path,
                1,
                missing[0] if missing else None,
                "expected the Azure Functions columns HashOwner,HashApp,HashFunction,Trigger,"
                "1,2,...,1440",
            )
        fn_col = header.index("HashFunction")
        total = np.zeros(len(minutes))
        for row in reader:
            if not row or (function is not None and row[fn_col].strip() != function):
                continue
            try:
                values = [float(row[i]) for i in minutes]
            except (ValueError, IndexError):
                raise TraceFormatError(
                    path, reader.line_num, None, "minute counts must be non-negative numbers"
                ) from None
            if min(values) < 0:
                raise TraceFormatError(path, reader.line_num, None, "negative invocation count")
            total += values
    if total.sum() <= 0:
        raise TraceFormatError(path, 2, None, "no invocations (is the function hash right?)")
    return total


def replay(times_s: np.ndarray, n: int, rate_per_ms: float) -> np.ndarray:
    """Recorded arrival times (s), rescaled to `rate_per_ms`; at most the trace's length."""
    process = TraceReplay(times=tuple(float(t) for t in times_s), rate=rate_per_ms * 1e3)
    return 1e3 * process.sample(float("inf"), np.random.default_rng(0))[:n]


def generate(
    kind: ArrivalKind,
    n: int,
    rate_per_ms: float,
    rng: np.random.Generator,
    *,
    sigma: float = 0.5,
    slot_ms: float = 1e3,
    trace_path: str | Path | None = None,
) -> np.ndarray:
    """`n` sorted arrival times in ms with mean rate `rate_per_ms`."""
    if kind == "bursty":
        return bursty(n, rate_per_ms, rng, sigma, slot_ms)
    if kind == "poisson":
        return bursty(n, rate_per_ms, rng, 0.0, slot_ms)
    if trace_path is None:
        raise ValueError(f"arrival kind {kind!r} needs a trace file (trace_path)")
    if kind == "azure_functions":
        return shaped_by_counts(read_azure_functions(trace_path), n, rate_per_ms, rng, slot_ms)
    return replay(read_azure_csv(trace_path).arrivals, n, rate_per_ms)
