"""Request-length distributions: empirical (resampled from a file) or fitted.

The fitted family is the lognormal, matched to the published mean and standard deviation
(sigma^2 = ln(1 + std^2/mean^2), mu = ln(mean) - sigma^2/2). LLM prompt and output lengths are
positive and heavily right-skewed, which the lognormal captures with two moments; lengths are
rounded to whole tokens, at least 1, and capped at `max_tokens` when given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from kairos.workloads.trace import Trace, _read_rows


class LengthDistribution(Protocol):
    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """`n` (prompt_tokens, output_tokens) pairs as int64 arrays."""
        ...


def _lognormal_params(mean: float, std: float) -> tuple[float, float]:
    if mean <= 0 or std < 0:
        raise ValueError(f"need mean > 0 and std >= 0, got mean={mean}, std={std}")
    sigma2 = float(np.log1p((std / mean) ** 2))
    return float(np.log(mean) - sigma2 / 2), float(np.sqrt(sigma2))


@dataclass(frozen=True)
class LognormalLengths:
    """Independent lognormal prompt and output lengths fitted from (mean, std)."""

    prompt_mean: float
    prompt_std: float
    output_mean: float
    output_std: float
    max_prompt: int | None = None
    max_output: int | None = None

    def _draw(
        self, mean: float, std: float, cap: int | None, n: int, rng: np.random.Generator
    ) -> np.ndarray:
        mu, sigma = _lognormal_params(mean, std)
        x = np.rint(rng.lognormal(mu, sigma, size=n)).astype(np.int64)
        x = np.maximum(x, 1)
        return np.minimum(x, cap) if cap is not None else x

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        p = self._draw(self.prompt_mean, self.prompt_std, self.max_prompt, n, rng)
        o = self._draw(self.output_mean, self.output_std, self.max_output, n, rng)
        return p, o


@dataclass(frozen=True)
class EmpiricalLengths:
    """Resamples (prompt, output) pairs jointly, keeping their correlation."""

    prompt: np.ndarray
    output: np.ndarray

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, len(self.prompt), size=n)
        return self.prompt[idx].copy(), np.maximum(self.output[idx], 1)

    @staticmethod
    def from_trace(trace: Trace) -> EmpiricalLengths:
        return EmpiricalLengths(trace.prompt_tokens.copy(), trace.output_tokens.copy())

    @staticmethod
    def from_csv(path: str | Path) -> EmpiricalLengths:
        """Any CSV with `num_prefill_tokens,num_decode_tokens` columns (Vidur's length files)."""
        cols = _read_rows(
            path,
            ("num_prefill_tokens", "num_decode_tokens"),
            {"num_prefill_tokens": "int", "num_decode_tokens": "int"},
        )
        return EmpiricalLengths(
            np.asarray(cols["num_prefill_tokens"], dtype=np.int64),
            np.asarray(cols["num_decode_tokens"], dtype=np.int64),
        )


# Published statistics of the Andes paper's datasets (prompt mean/std, output mean/std).
DATASETS: dict[str, tuple[float, float, float, float]] = {
    "sharegpt": (3171.0, 7943.0, 385.0, 300.0),
    "arxiv": (17855.0, 11401.0, 605.0, 153.0),
    "coding": (675.0, 1552.0, 5423.0, 21293.0),
}


def dataset_lengths(
    name: str, max_prompt: int | None = None, max_output: int | None = None
) -> LognormalLengths:
    """The fitted length distribution of a named dataset (see `DATASETS`)."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}")
    pm, ps, om, os_ = DATASETS[name]
    return LognormalLengths(pm, ps, om, os_, max_prompt, max_output)


def synthesize(
    arrivals: np.ndarray,
    lengths: LengthDistribution,
    rng: np.random.Generator,
    source: str = "synthetic",
) -> Trace:
    """A trace from arrival times and a length distribution."""
    p, o = lengths.sample(len(arrivals), rng)
    return Trace(np.asarray(arrivals, dtype=np.float64), p, o, source=source)
