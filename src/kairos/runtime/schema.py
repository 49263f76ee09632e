"""The one base for every request body a kairos server accepts.

Each server used to spell its own `ConfigDict`, and one forgot `allow_inf_nan=False`: Venn
stored a `deadline_s` of `1e999` (infinity) and answered 500 on every later read. Request models
derive from `RequestBody` instead, so the rules a body must meet are written once: exact types
(no "1" for 1), finite numbers, and no fields the server does not know.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RequestBody(BaseModel):
    """Strict, finite, closed. A model that must accept clients' extra fields (the OpenAI wire
    format) overrides `extra` alone and keeps the rest."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid")
