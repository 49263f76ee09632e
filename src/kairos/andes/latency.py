"""Latency models: how long an engine iteration takes, so the scheduler can reason about time.

The scheduler needs four numbers: a decode iteration's time at batch size B with C context
tokens (`τ(B)`), a prefill's time, and the cost of preempting by recompute (a prefill of
prompt + generated tokens on resume) or by swap (copying the KV cache over PCIe, each way).

Prefill is costed per prompt. The linear layers run once over all the prompts an iteration
prefills, so their cost (and the fixed per-iteration cost) follows the batch's summed tokens;
attention is computed within each prompt, so its quadratic term follows each prompt's own
length: n new tokens after k cached ones (a chunk, or a prompt with a cached prefix) attend
over `(k + n)^2 - k^2` token pairs (up to the causal 1/2), which adds up over a prompt's
chunks to the whole prompt's `n^2`. `prefill_time` is one prompt (or chunk) in an iteration
of its own, elementwise over arrays; `batch_prefill_time` is one iteration prefilling several.
Costing the quadratic on the batch's summed length instead would charge 100 prompts of 2,000
tokens like one prompt of 200,000.

Two implementations share that interface:

- `RooflineProfile`: the paper's four deployments (Table 1), built from hardware and model
  constants. A decode step reads all weights and the batch's KV cache (memory-bound) and does
  2 x active-params FLOPs per sequence (compute-bound); it takes the larger of the two, plus a
  fixed per-iteration cost (kernel launches, tensor-parallel all-reduce, Python scheduling)
  and a small per-sequence cost (sampling, detokenising). Efficiencies are calibration
  constants, chosen so the FCFS baseline shows the paper's operating points: about 11 tokens/s
  per stream under load and prefill of a few thousand tokens/s (spec section 7).
- `LinearProfile`: a model fitted to measured samples (`fit_profile`), e.g. by
  `kairos andes profile` on our own engine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

GB = 1e9
GIB = 1024**3


class LatencyModel(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def block_size(self) -> int: ...

    @property
    def kv_capacity_tokens(self) -> int: ...

    @property
    def swap_capacity_tokens(self) -> int: ...

    def decode_time(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> np.ndarray: ...

    def prefill_time(
        self, tokens: np.ndarray | float, context: np.ndarray | float = 0
    ) -> np.ndarray:
        """A prefill iteration of one prompt or chunk: `tokens` new after `context` cached
        (elementwise over arrays: each one alone)."""
        ...

    def batch_prefill_time(
        self, tokens: Sequence[int] | np.ndarray, context: Sequence[int] | np.ndarray | None = None
    ) -> float:
        """One iteration prefilling these prompts or chunks together."""
        ...

    def prefix_prefill_times(
        self, tokens: Sequence[int] | np.ndarray, context: Sequence[int] | np.ndarray
    ) -> np.ndarray:
        """`batch_prefill_time` of the first i prompts, for every i."""
        ...

    def swap_time(self, tokens: np.ndarray | float) -> np.ndarray:
        """One-way copy of a request's KV cache between GPU and host memory."""
        ...

    def regather_time(self, tokens: float) -> float:
        """What a decode iteration costs extra when its batch changed since the last one
        (`tokens`: decodes x the longest context among them). Our CPU engine keeps the
        running batch's contexts gathered while the batch stays the same and gathers
        afresh when it changes; an engine that attends in place pays nothing."""
        ...


def attention_pairs(
    tokens: np.ndarray | float | Sequence[int], context: np.ndarray | float | Sequence[int] = 0
) -> np.ndarray:
    """`(k + n)^2 - k^2` for n new tokens after k cached: a prompt's quadratic attention term,
    which adds up over its chunks to the whole prompt's."""
    n = np.asarray(tokens, dtype=np.float64)
    return n * (n + 2.0 * np.asarray(context, dtype=np.float64))


class PerPromptPrefill:
    """Prefill costing shared by the profiles: each supplies `_prefill(tokens, pairs)`, one
    iteration's time given its summed new tokens and summed attention pairs."""

    def _prefill(self, tokens: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def prefill_time(
        self, tokens: np.ndarray | float, context: np.ndarray | float = 0
    ) -> np.ndarray:
        n = np.asarray(tokens, dtype=np.float64)
        return np.where(n > 0, self._prefill(n, attention_pairs(n, context)), 0.0)

    def batch_prefill_time(
        self, tokens: Sequence[int] | np.ndarray, context: Sequence[int] | np.ndarray | None = None
    ) -> float:
        n = np.asarray(tokens, dtype=np.float64)
        total = float(n.sum())
        if total <= 0:
            return 0.0
        pairs = attention_pairs(n, 0 if context is None else context).sum()
        return float(self._prefill(np.asarray(total), np.asarray(pairs)))

    def prefix_prefill_times(
        self, tokens: Sequence[int] | np.ndarray, context: Sequence[int] | np.ndarray
    ) -> np.ndarray:
        """One array call where an admission loop would ask `batch_prefill_time` once per
        prompt it adds (pacing does, every iteration): the same numbers, since token counts
        and attention pairs are whole numbers, summed exactly in any order."""
        n = np.asarray(tokens, dtype=np.float64)
        total = np.cumsum(n)
        return np.where(
            total > 0, self._prefill(total, np.cumsum(attention_pairs(n, context))), 0.0
        )


class RooflineProfile(PerPromptPrefill, BaseModel):
    """A deployment (model x GPUs) described by its hardware and model constants."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["roofline"] = "roofline"
    name: str
    n_gpus: PositiveInt
    gpu_memory_gb: PositiveFloat = 40.0  # A100 SXM4 40GB
    hbm_tb_s: PositiveFloat = 1.555  # A100 40GB HBM2 bandwidth per GPU
    peak_tflops: PositiveFloat = 312.0  # A100 dense BF16
    pcie_gb_s: PositiveFloat = 25.0  # effective host<->GPU copy rate per GPU (PCIe 4.0 x16)
    weight_gb: PositiveFloat  # Table 1 "Memory"
    active_params_b: PositiveFloat  # parameters touched per token (MoE: the active experts)
    n_layers: PositiveInt
    d_model: PositiveInt
    kv_bytes_per_token: PositiveFloat  # 2 (K,V) x layers x kv_heads x head_dim x 2 bytes
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)  # vLLM's default
    activation_reserve_gb_per_gpu: float = Field(2.0, ge=0)
    swap_space_gib_per_gpu: float = Field(4.0, ge=0)  # vLLM's default --swap-space
    memory_efficiency: float = Field(0.6, gt=0, le=1)  # achieved / peak HBM bandwidth
    decode_flop_efficiency: float = Field(0.5, gt=0, le=1)
    prefill_flop_efficiency: float = Field(0.3, gt=0, le=1)
    iteration_overhead_s: float = Field(0.008, ge=0)
    per_sequence_overhead_s: float = Field(5e-5, ge=0)
    block_size: PositiveInt = 16

    @property
    def kv_capacity_tokens(self) -> int:
        usable = self.n_gpus * (
            self.gpu_memory_gb * self.gpu_memory_utilization - self.activation_reserve_gb_per_gpu
        )
        free_gb = usable - self.weight_gb
        if free_gb <= 0:
            raise ValueError(f"{self.name}: the weights do not fit in GPU memory")
        tokens = int(free_gb * GB / self.kv_bytes_per_token)
        return tokens - tokens % self.block_size

    @property
    def swap_capacity_tokens(self) -> int:
        tokens = int(self.n_gpus * self.swap_space_gib_per_gpu * GIB / self.kv_bytes_per_token)
        return tokens - tokens % self.block_size

    def _flops(self) -> float:
        return self.n_gpus * self.peak_tflops * 1e12

    def decode_time(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> np.ndarray:
        if isinstance(batch, int | float) and isinstance(context_tokens, int | float):
            # one iteration's cost, asked every simulated iteration: the same arithmetic on
            # Python floats (IEEE doubles, same order, so the same bits) without numpy's
            # per-call overhead on 0-d arrays
            t = self._decode(float(batch), float(context_tokens), max)
            return np.asarray(t if batch > 0 else 0.0)
        b = np.asarray(batch, dtype=np.float64)
        ctx = np.asarray(context_tokens, dtype=np.float64)
        return np.where(b > 0, self._decode(b, ctx, np.maximum), 0.0)

    def _decode(self, b: Any, ctx: Any, maximum: Callable[[Any, Any], Any]) -> Any:
        bytes_read = self.weight_gb * GB + self.kv_bytes_per_token * ctx
        t_mem = bytes_read / (self.n_gpus * self.hbm_tb_s * 1e12 * self.memory_efficiency)
        flops = 2.0 * self.active_params_b * 1e9 * b + 4.0 * self.n_layers * self.d_model * ctx
        t_compute = flops / (self._flops() * self.decode_flop_efficiency)
        return (
            self.iteration_overhead_s + self.per_sequence_overhead_s * b + maximum(t_mem, t_compute)
        )

    def _prefill(self, tokens: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """Weights' FLOPs on every new token, attention's on each prompt's own pairs."""
        flops = (
            2.0 * self.active_params_b * 1e9 * tokens + 2.0 * self.n_layers * self.d_model * pairs
        )
        t_compute = flops / (self._flops() * self.prefill_flop_efficiency)
        t_mem = self.weight_gb * GB / (self.n_gpus * self.hbm_tb_s * 1e12 * self.memory_efficiency)
        return self.iteration_overhead_s + np.maximum(t_compute, t_mem)

    def swap_time(self, tokens: np.ndarray | float) -> np.ndarray:
        n = np.asarray(tokens, dtype=np.float64)
        return n * self.kv_bytes_per_token / (self.n_gpus * self.pcie_gb_s * GB)

    def regather_time(self, tokens: float) -> float:
        return 0.0  # GPU engines (vLLM's paged kernels) attend in place


class LinearProfile(PerPromptPrefill, BaseModel):
    """A latency model fitted to measurements (non-negative least squares).

    decode(B, C) = d0 + d1*B + d2*C;  swap(T) = s1*T;  a prefill iteration over prompts (or
    chunks) of n_i new tokens after k_i cached: p0 + p1*sum(n_i) + p2*sum((k_i+n_i)^2 - k_i^2),
    so one prompt of T tokens costs p0 + p1*T + p2*T^2.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["linear"] = "linear"
    name: str
    decode_coef: tuple[float, float, float]
    prefill_coef: tuple[float, float, float]
    swap_s_per_token: float = Field(ge=0)
    regather_s_per_token: float = Field(0.0, ge=0)  # see `LatencyModel.regather_time`
    kv_capacity: PositiveInt
    swap_capacity: int = Field(ge=0)
    block_size: PositiveInt = 16

    @property
    def kv_capacity_tokens(self) -> int:
        return self.kv_capacity

    @property
    def swap_capacity_tokens(self) -> int:
        return self.swap_capacity

    def decode_time(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> np.ndarray:
        d0, d1, d2 = self.decode_coef
        if isinstance(batch, int | float) and isinstance(context_tokens, int | float):
            # plain numbers (the engine asks every iteration): no array round trip
            return np.asarray(d0 + d1 * batch + d2 * context_tokens if batch > 0 else 0.0)
        b = np.asarray(batch, dtype=np.float64)
        t = d0 + d1 * b + d2 * np.asarray(context_tokens, dtype=np.float64)
        return np.where(b > 0, t, 0.0)

    def _prefill(self, tokens: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        p0, p1, p2 = self.prefill_coef
        return p0 + p1 * tokens + p2 * pairs

    def prefill_time(
        self, tokens: np.ndarray | float, context: np.ndarray | float = 0
    ) -> np.ndarray:
        if isinstance(tokens, int | float) and isinstance(context, int | float):
            # plain numbers (the engine asks every iteration): no array round trip
            p0, p1, p2 = self.prefill_coef
            pairs = tokens * (tokens + 2 * context)
            return np.asarray(p0 + p1 * tokens + p2 * pairs if tokens > 0 else 0.0)
        return super().prefill_time(tokens, context)

    def swap_time(self, tokens: np.ndarray | float) -> np.ndarray:
        return self.swap_s_per_token * np.asarray(tokens, dtype=np.float64)

    def regather_time(self, tokens: float) -> float:
        return self.regather_s_per_token * tokens

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.model_dump_json(indent=2))

    def scaled(self, factor: float, name: str | None = None) -> LinearProfile:
        """Every iteration `factor` times slower (e.g. the overhead of serving over HTTP that
        an offline measurement cannot see); swap copies are unchanged."""
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"scale factor must be a finite number > 0, got {factor}")
        return self.model_copy(
            update={
                "name": name or f"{self.name} x{factor:.3f}",
                "decode_coef": tuple(c * factor for c in self.decode_coef),
                "prefill_coef": tuple(c * factor for c in self.prefill_coef),
                "regather_s_per_token": self.regather_s_per_token * factor,
            }
        )


def prefill_row(
    tokens: Sequence[int], context: Sequence[int] | None = None, seconds: float = 0.0
) -> tuple[float, float, float]:
    """One measured prefill iteration as `fit_profile` reads it: (summed new tokens, summed
    attention pairs, seconds)."""
    pairs = attention_pairs(tokens, 0 if context is None else context)
    return float(np.sum(tokens)), float(pairs.sum()), seconds


def fit_profile(
    name: str,
    decode_samples: np.ndarray,
    prefill_samples: np.ndarray,
    *,
    kv_capacity: int,
    swap_capacity: int = 0,
    swap_s_per_token: float = 0.0,
    block_size: int = 16,
    regather_samples: np.ndarray | None = None,
) -> LinearProfile:
    """Fit from decode rows `(batch, context_tokens, s)` and prefill rows: `(tokens, s)` for
    an iteration of one prompt, or `(tokens, pairs, s)` for one that prefilled several prompts
    or chunks, with `tokens` their summed new tokens and `pairs` their summed
    `attention_pairs` (`prefill_row`), so the quadratic is fitted per prompt.

    `regather_samples`, rows `(batch, context_tokens, regather_tokens, s)` of decode
    iterations whose batch had just changed, give the regather cost: what they took beyond
    the fitted decode time, per regathered token (least squares, at least 0)."""
    dec = np.asarray(decode_samples, dtype=np.float64)
    pre = np.asarray(prefill_samples, dtype=np.float64)
    if dec.ndim != 2 or dec.shape[1] != 3 or len(dec) < 3:
        raise ValueError(
            "decode_samples must be rows of (batch, context_tokens, seconds), >= 3 rows"
        )
    if pre.ndim != 2 or pre.shape[1] not in (2, 3) or len(pre) < 3:
        raise ValueError(
            "prefill_samples must be rows of (tokens, seconds) or (tokens, pairs, seconds), "
            ">= 3 rows"
        )
    if pre.shape[1] == 2:  # single prompts: their pairs are tokens^2
        pre = np.column_stack([pre[:, 0], pre[:, 0] ** 2, pre[:, 1]])
    from scipy.optimize import nnls  # here: scipy.optimize costs every `kairos` call seconds

    a_dec = np.column_stack([np.ones(len(dec)), dec[:, 0], dec[:, 1]])
    d_coef, _ = nnls(a_dec, dec[:, 2])
    a_pre = np.column_stack([np.ones(len(pre)), pre[:, 0], pre[:, 1]])
    p_coef, _ = nnls(a_pre, pre[:, 2])
    regather = 0.0
    if regather_samples is not None and len(regather_samples):
        g = np.asarray(regather_samples, dtype=np.float64)
        if g.ndim != 2 or g.shape[1] != 4:
            raise ValueError(
                "regather_samples must be rows of (batch, context_tokens, regather_tokens, seconds)"
            )
        extra = g[:, 3] - (d_coef[0] + d_coef[1] * g[:, 0] + d_coef[2] * g[:, 1])
        regather = max(0.0, float(extra @ g[:, 2] / max(float(g[:, 2] @ g[:, 2]), 1e-12)))
    return LinearProfile(
        name=name,
        decode_coef=(float(d_coef[0]), float(d_coef[1]), float(d_coef[2])),
        prefill_coef=(float(p_coef[0]), float(p_coef[1]), float(p_coef[2])),
        swap_s_per_token=swap_s_per_token,
        regather_s_per_token=regather,
        kv_capacity=kv_capacity,
        swap_capacity=swap_capacity,
        block_size=block_size,
    )


def _kv(layers: int, kv_heads: int, head_dim: int) -> float:
    return 2.0 * layers * kv_heads * head_dim * 2.0  # K and V, bf16


# The paper's Table 1. Architecture constants are the models' published configurations.
PROFILES: dict[str, RooflineProfile] = {
    p.name: p
    for p in (
        RooflineProfile(
            name="phi-3-mini",
            n_gpus=4,
            weight_gb=7.0,
            active_params_b=3.8,
            n_layers=32,
            d_model=3072,
            kv_bytes_per_token=_kv(32, 32, 96),
            iteration_overhead_s=0.012,
        ),
        RooflineProfile(
            name="command-r",
            n_gpus=8,
            weight_gb=61.0,
            active_params_b=32.0,
            n_layers=40,
            d_model=8192,
            kv_bytes_per_token=_kv(40, 8, 128),
        ),
        RooflineProfile(
            name="phi-3.5-moe",
            n_gpus=8,
            weight_gb=80.0,
            active_params_b=6.6,
            n_layers=32,
            d_model=4096,
            kv_bytes_per_token=_kv(32, 8, 128),
            iteration_overhead_s=0.012,
        ),
        RooflineProfile(
            name="llama-3.1-70b",
            n_gpus=8,
            weight_gb=132.0,
            active_params_b=70.0,
            n_layers=80,
            d_model=8192,
            kv_bytes_per_token=_kv(80, 8, 128),
        ),
    )
}
DEFAULT_PROFILE = "llama-3.1-70b"


def load_profile(name_or_path: str) -> RooflineProfile | LinearProfile:
    """A built-in profile by name, or a fitted profile from a JSON file."""
    if name_or_path in PROFILES:
        return PROFILES[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise ValueError(
            f"unknown profile {name_or_path!r}: not one of {sorted(PROFILES)} nor a file"
        )
    data = json.loads(path.read_text())
    if data.get("kind") == "roofline":
        return RooflineProfile.model_validate(data)
    return LinearProfile.model_validate(data)


def decode_rate(model: LatencyModel, batch: int, context_tokens: float) -> float:
    """Tokens per second per stream at batch size `batch`."""
    t = float(model.decode_time(batch, context_tokens))
    return 1.0 / t if t > 0 else math.inf
