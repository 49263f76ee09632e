"""Rotary position embeddings: the frequency schedules a checkpoint can name, and both ways
transformers writes them.

A checkpoint saved by transformers 4 puts `rope_theta` and `rope_scaling` at the top of
`config.json`; transformers 5 writes one `rope_parameters` dict (`rope_theta`, `rope_type`,
and the type's own keys) and neither top-level key. Reading only one dialect loads the other
with theta 10000 and no scaling, silently: the model runs and every position is wrong. So
`read_hf_rope` reads both, and every schedule is either computed here exactly as the
reference computes it (`default`, `linear`, `llama3`, `yarn`; tests compare logits with
transformers' own) or refused by name. The frequencies are fixed per checkpoint, so the
cos/sin tables are built once; `dynamic` and `longrope` change them with the current
sequence length, which a paged cache holding keys rotated at earlier lengths cannot follow.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from torch import nn

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class LinearRope(BaseModel):
    """Position interpolation: every frequency divided by `factor`."""

    model_config = _STRICT
    rope_type: Literal["linear"] = "linear"
    factor: float = Field(gt=0)

    def scale(self, inv_freq: torch.Tensor, theta: float) -> tuple[torch.Tensor, float]:
        return inv_freq / self.factor, 1.0


class Llama3Rope(BaseModel):
    """Llama 3.1: long wavelengths divided by `factor`, short ones kept, a smooth ramp between."""

    model_config = _STRICT
    rope_type: Literal["llama3"] = "llama3"
    factor: float = Field(gt=0)
    low_freq_factor: float = Field(gt=0)
    high_freq_factor: float = Field(gt=0)
    original_max_position_embeddings: PositiveInt

    @model_validator(mode="after")
    def _ramp(self) -> Llama3Rope:
        if self.high_freq_factor <= self.low_freq_factor:
            raise ValueError(
                f"high_freq_factor={self.high_freq_factor} must exceed "
                f"low_freq_factor={self.low_freq_factor} (the ramp between them divides by the gap)"
            )
        return self

    def scale(self, inv_freq: torch.Tensor, theta: float) -> tuple[torch.Tensor, float]:
        old_len = self.original_max_position_embeddings
        wavelen = 2 * math.pi / inv_freq
        low_wavelen, high_wavelen = old_len / self.low_freq_factor, old_len / self.high_freq_factor
        scaled = torch.where(wavelen > low_wavelen, inv_freq / self.factor, inv_freq)
        smooth = (old_len / wavelen - self.low_freq_factor) / (
            self.high_freq_factor - self.low_freq_factor
        )
        smoothed = (1 - smooth) * scaled / self.factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return torch.where(medium, smoothed, scaled), 1.0


class YarnRope(BaseModel):
    """YaRN: interpolate the low frequencies, keep the high ones, ramp between (over the
    dimensions set by `beta_fast`/`beta_slow`), and scale cos and sin by `attention_factor`."""

    model_config = _STRICT
    rope_type: Literal["yarn"] = "yarn"
    factor: float = Field(gt=0)
    original_max_position_embeddings: PositiveInt
    attention_factor: float | None = Field(None, gt=0)
    beta_fast: float = Field(32.0, gt=0)
    beta_slow: float = Field(1.0, gt=0)
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool = True

    def _mscale(self, m: float = 1.0) -> float:
        return 1.0 if self.factor <= 1 else 0.1 * m * math.log(self.factor) + 1.0

    def scale(self, inv_freq: torch.Tensor, theta: float) -> tuple[torch.Tensor, float]:
        attention = self.attention_factor
        if attention is None:
            if self.mscale and self.mscale_all_dim:
                attention = self._mscale(self.mscale) / self._mscale(self.mscale_all_dim)
            else:
                attention = self._mscale()
        half = inv_freq.shape[0]
        dim = 2 * half

        def correction_dim(rotations: float) -> float:
            ctx = self.original_max_position_embeddings
            return dim * math.log(ctx / (rotations * 2 * math.pi)) / (2 * math.log(theta))

        low, high = correction_dim(self.beta_fast), correction_dim(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001  # as the reference: no division by zero
        ramp = ((torch.arange(half, dtype=inv_freq.dtype) - low) / (high - low)).clamp(0, 1)
        keep = 1 - ramp  # 1: extrapolate (the original frequency), 0: interpolate
        return inv_freq / self.factor * (1 - keep) + inv_freq * keep, attention


RopeScaling = Annotated[LinearRope | Llama3Rope | YarnRope, Field(discriminator="rope_type")]
_SCALING: TypeAdapter[LinearRope | Llama3Rope | YarnRope] = TypeAdapter(RopeScaling)

SUPPORTED = ("default", "linear", "llama3", "yarn")
REFUSED = {
    "dynamic": "its frequencies follow the current sequence length, so keys already in the "
    "paged cache would disagree with new ones",
    "longrope": "it switches frequency sets when a sequence passes "
    "original_max_position_embeddings, which keys already in the paged cache cannot follow",
}
_THETA_DEFAULT = 10000.0  # transformers' default when a config names no theta


def read_hf_rope(
    raw: dict[str, Any], path: str | Path, max_position_embeddings: int
) -> tuple[float, RopeScaling | None]:
    """(theta, scaling) from a `config.json` of either dialect, or a ValueError naming the
    file, the key and what to do. Precedence follows transformers 5: the rope dict's own
    `rope_theta` first, then the top-level one, then 10000."""
    key, params = _rope_dict(raw, path)
    theta = params.pop("rope_theta", None)
    theta = raw.get("rope_theta") if theta is None else theta
    theta = _THETA_DEFAULT if theta is None else theta
    if not isinstance(theta, int | float) or not math.isfinite(theta) or theta <= 0:
        raise ValueError(f"{path}: rope_theta must be a positive finite number, got {theta!r}")
    rope_type = params.pop("rope_type", None) or params.get("type") or "default"
    params.pop("type", None)
    partial = params.pop("partial_rotary_factor", raw.get("partial_rotary_factor"))
    if partial not in (None, 1, 1.0):
        raise ValueError(
            f"{path}: partial_rotary_factor={partial} (rotating part of each head) is not "
            "supported; Llama and Qwen2 rotate the whole head"
        )
    where = f"{path}: {key}.rope_type {rope_type!r}"
    if rope_type in REFUSED:
        raise ValueError(f"{where} is not supported: {REFUSED[rope_type]}")
    if rope_type not in SUPPORTED:
        raise ValueError(f"{where} is not supported; supported: {', '.join(SUPPORTED)}")
    if rope_type == "default":
        if params:
            raise ValueError(f"{where} takes no other keys; found {sorted(params)}")
        return float(theta), None
    params = {k: v for k, v in params.items() if v is not None}  # null: the reference's default
    if rope_type in ("llama3", "yarn"):  # the reference's default for a missing original length
        params.setdefault("original_max_position_embeddings", max_position_embeddings)
    original = params["original_max_position_embeddings"] if rope_type == "yarn" else None
    if isinstance(original, int) and original > 0:
        params.setdefault("factor", max_position_embeddings / original)
    try:
        return float(theta), _SCALING.validate_python({**params, "rope_type": rope_type})
    except ValidationError as exc:
        fields = "; ".join(
            f"{'.'.join([key, *(str(p) for p in e['loc'][1:])])}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"{path}: {fields}") from None


def _rope_dict(raw: dict[str, Any], path: str | Path) -> tuple[str, dict[str, Any]]:
    """The key the RoPE settings were found under and a copy of them ({} when neither)."""
    v4, v5 = raw.get("rope_scaling"), raw.get("rope_parameters")
    for key, value in (("rope_scaling", v4), ("rope_parameters", v5)):
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{path}: {key} must be an object or null, got {value!r}")
    if v4 and v5 and _normalised(v4) != _normalised(v5):
        raise ValueError(
            f"{path}: both rope_scaling (transformers 4) and rope_parameters (transformers 5) "
            "are set and they disagree; keep one of them"
        )
    return ("rope_parameters", dict(v5)) if v5 else ("rope_scaling", dict(v4 or {}))


def _normalised(params: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in params.items() if k not in ("type", "rope_theta")}
    out["rope_type"] = params.get("rope_type") or params.get("type") or "default"
    return out


def hf_rope_parameters(theta: float, scaling: RopeScaling | None) -> dict[str, Any]:
    """The transformers 5 `rope_parameters` dict for (theta, scaling)."""
    extra = scaling.model_dump(exclude_none=True) if scaling else {"rope_type": "default"}
    return {"rope_theta": theta, **extra}


def inverse_frequencies(
    head_dim: int, theta: float, scaling: RopeScaling | None
) -> tuple[torch.Tensor, float]:
    """float64 inverse frequencies [head_dim/2] and the factor cos and sin are scaled by."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return scaling.scale(inv_freq, theta) if scaling else (inv_freq, 1.0)


class RotaryEmbedding(nn.Module):
    """Rotate-half RoPE (the Hugging Face Llama convention).

    The cos/sin tables for every position up to `max_positions` are computed once, in
    float64, and kept per (device, dtype) outside the module's buffers, so `model.to(bf16)`
    cannot round the frequencies; a forward pass only indexes them."""

    def __init__(
        self, head_dim: int, theta: float, max_positions: int, scaling: RopeScaling | None = None
    ) -> None:
        super().__init__()
        self.max_positions = max_positions
        self.inv_freq, self.attention_scale = inverse_frequencies(head_dim, theta, scaling)
        self._tables: dict[tuple[torch.device, torch.dtype], tuple[torch.Tensor, ...]] = {}

    def _table(self, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        key = (device, dtype)
        if key not in self._tables:
            freqs = torch.arange(self.max_positions, dtype=torch.float64)[:, None] * self.inv_freq
            cos, sin = freqs.cos() * self.attention_scale, freqs.sin() * self.attention_scale
            signed_sin = torch.cat([-sin, sin], dim=-1)  # see `apply_rope`
            cos = torch.cat([cos, cos], dim=-1)
            self._tables[key] = (cos.to(device, dtype), signed_sin.to(device, dtype))
        return self._tables[key]

    def cos_sin(
        self, positions: torch.Tensor, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """[T, 1, D] cos and signed sin for positions [T] (each below `max_positions`)."""
        cos, sin = self._table(positions.device, dtype)
        return cos[positions][:, None, :], sin[positions][:, None, :]

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return apply_rope(x, *self.cos_sin(positions, x.dtype))


def apply_rope(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """x [T, heads, D] rotated by per-token angles.

    Hugging Face's `x * cos + rotate_half(x) * sin`, with `rotate_half(x) = [-x2, x1]`
    written as `roll(x) = [x2, x1]` times a sin table whose first half is negated: three
    ops instead of five, which matters at decode sizes where each op is mostly overhead."""
    return torch.addcmul(x * cos, x.roll(x.shape[-1] // 2, -1), signed_sin)
