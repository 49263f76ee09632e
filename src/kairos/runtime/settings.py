"""The settings every kairos server shares: where it listens and how it protects itself.

Each system's settings (Andes `ServerSettings`, Orloj `RuntimeSettings`, Venn `ServiceSettings`)
subclass these, so `host`, `port`, `api_key`, the body limit and the log level are validated the
same way everywhere, and a typo in any of them fails at startup instead of being ignored.
Defaults are safe for a laptop: loopback only, no key. Set `api_key` before exposing a server.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kairos.runtime.errors import APIError

LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]
MIN_BODY_BYTES = 64  # below this not even a minimal JSON request fits


class HTTPSettings(BaseModel):
    """How a server listens and what it accepts; frozen and strict (unknown keys fail)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field("127.0.0.1", description="interface to bind (loopback by default)")
    port: int = Field(8000, ge=0, le=65535, description="0 picks a free port")
    api_key: str | None = Field(
        None, min_length=1, description="when set, /v1/* requires `Authorization: Bearer <key>`"
    )
    max_body_bytes: int = Field(
        64 * 1024, ge=MIN_BODY_BYTES, description="larger request bodies get 413"
    )
    body_timeout_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="a request body not fully received in this time gets 408 (slow clients)",
    )
    log_level: LogLevel = "info"
    graceful_shutdown_s: int = Field(
        5, ge=0, description="how long shutdown waits for open requests and streams"
    )


class OverloadSettings(HTTPSettings):
    """For a server that refuses work past a bound with 429 and a `Retry-After` hint."""

    retry_after_s: int = Field(1, ge=0, description="Retry-After sent with 429")

    def overloaded(self, reason: str) -> APIError:
        """The 429 every overloaded kairos server answers: OpenAI's `rate_limit_exceeded` code
        (its SDKs retry on it) and the `Retry-After` header, the reason and wait in the text."""
        retry = self.retry_after_s
        return APIError(
            429,
            f"{reason}; retry after {retry} s.",
            code="rate_limit_exceeded",
            headers={"Retry-After": str(retry)},
        )
