"""Server-wide knobs, validated once at startup so a typo fails loudly instead of being ignored."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kairos.andes.qoe import PROFILES
from kairos.runtime.settings import MIN_BODY_BYTES, OverloadSettings


class ServerSettings(OverloadSettings):
    """How the OpenAI-compatible server listens, protects itself and fills in QoE defaults.

    The listening and protection knobs (host, port, api_key, log level, Retry-After) are every
    server's (`kairos.runtime.settings`); bodies here may be up to 1 MiB (long prompts).
    """

    max_body_bytes: int = Field(
        default=1 << 20, ge=MIN_BODY_BYTES, description="larger bodies get 413"
    )
    max_prompt_tokens: int | None = Field(
        default=None, ge=1, description="longest prompt accepted; None: limited by max_model_len"
    )
    max_waiting: int = Field(
        default=256, ge=1, description="queued requests at which new ones get 429"
    )
    default_profile: Literal["reader", "listener"] = Field(
        default="reader", description="QoE speed table used when a request names no speed"
    )
    default_ttft_s: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="TTFT target when a request names none; None: max(prompt/5000 tok/s, 1 s)",
    )
    prefill_tokens_per_s: float = Field(
        default=5000.0, gt=0, allow_inf_nan=False, description="prefill rate in ttft_target"
    )
    serve_static: bool = Field(default=True, description="serve the chat page at / if present")

    def profile_speed(self, profile: str | None = None) -> float:
        """Population-weighted mean consumption speed (tokens/s) of a named QoE profile."""
        return profile_mean_speed(profile or self.default_profile)


def profile_mean_speed(profile: str) -> float:
    """Mean of a PROFILES table weighted by population share (the shares need not sum to 1)."""
    table = PROFILES[profile]
    total = sum(w for _, w in table)
    return sum(s * w for s, w in table) / total
