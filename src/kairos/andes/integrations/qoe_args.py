"""Per-request QoE targets as vLLM carries them: the `vllm_xargs` of an OpenAI request.

vLLM passes `vllm_xargs` through unchanged as `SamplingParams.extra_args`, so this is the one
way a client can tell a scheduler inside vLLM what its user expects. The names are flat
because `vllm_xargs` is a flat map of strings and numbers:

- `qoe_ttft_s`: seconds until the first token is due (a number >= 0);
- `qoe_tokens_per_s`: the user's reading (or listening) speed (a number > 0);
- `qoe`: a named preset, `reader` or `listener`: the population-mean speed of that table
  (kairos.andes.qoe.PROFILES), the same presets kairos's own server takes.

`qoe` and `qoe_tokens_per_s` both name a speed, so giving both is an error. What a request
leaves out comes from the server's defaults (`QoEDefaults`): the default preset's speed, and
the default TTFT or, when none is set, the paper's `max(prompt / 5000 tokens/s, 1 s)`.

This module imports nothing from vLLM: the frontend validator and the scheduler (both in
`kairos.andes.integrations.vllm`) call it, and tests run it without vLLM installed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kairos.andes.qoe import PROFILES, QoEParams, ttft_target

TTFT_KEY = "qoe_ttft_s"
SPEED_KEY = "qoe_tokens_per_s"
PRESET_KEY = "qoe"
KEYS = (TTFT_KEY, SPEED_KEY, PRESET_KEY)


class QoEArgError(ValueError):
    """A malformed QoE value; `key` names the `vllm_xargs` entry at fault."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"vllm_xargs[{key!r}]: {message}")
        self.key = key


class QoEDefaults(BaseModel):
    """The server-wide QoE of a request that names none (or only part of one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: Literal["reader", "listener"] = "reader"
    ttft_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    prefill_tokens_per_s: float = Field(default=5000.0, gt=0, allow_inf_nan=False)


def preset_speed(name: str) -> float:
    """Population-weighted mean speed (tokens/s) of a preset's table."""
    table = PROFILES[name]
    return sum(s * w for s, w in table) / sum(w for _, w in table)


def _number(args: Mapping[str, Any], key: str, minimum: float, strict: bool) -> float | None:
    if key not in args:
        return None
    v = args[key]
    # a bool is an int to Python but never a duration or a speed; a numeric string is a
    # client bug worth reporting rather than guessing at
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise QoEArgError(key, f"must be a number, got {v!r}")
    x = float(v)
    if not math.isfinite(x) or x < minimum or (strict and x == minimum):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise QoEArgError(key, f"must be a finite number {bound}, got {v!r}")
    return x


def parse_qoe(
    extra_args: Mapping[str, Any] | None, prompt_len: int, defaults: QoEDefaults
) -> QoEParams:
    """The request's QoE target, its missing parts filled from `defaults`.

    Raises `QoEArgError` naming the key for a malformed value. Keys other than the three
    above are left alone: `vllm_xargs` is shared with other extensions."""
    args = extra_args or {}
    ttft = _number(args, TTFT_KEY, 0.0, strict=False)
    speed = _number(args, SPEED_KEY, 0.0, strict=True)
    if PRESET_KEY in args:
        name = args[PRESET_KEY]
        if not isinstance(name, str) or name not in PROFILES:
            raise QoEArgError(PRESET_KEY, f"unknown preset {name!r}; use one of {sorted(PROFILES)}")
        if speed is not None:
            raise QoEArgError(PRESET_KEY, f"give either {PRESET_KEY!r} or {SPEED_KEY!r}, not both")
        speed = preset_speed(name)
    if ttft is None:
        ttft = defaults.ttft_s
    if ttft is None:
        ttft = float(ttft_target(prompt_len, defaults.prefill_tokens_per_s))
    if speed is None:
        speed = preset_speed(defaults.preset)
    return QoEParams(ttft_s=ttft, tokens_per_s=speed)
