"""Optional API-key protection for every kairos server: `Authorization: Bearer <key>`.

The comparison is constant-time (`hmac.compare_digest`), and a missing or wrong key answers
401 with `WWW-Authenticate: Bearer`, as HTTP clients and OpenAI SDKs expect.
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Depends, Request

from kairos.runtime.errors import APIError


def api_key_dependency(api_key: str | None) -> Any:
    """A FastAPI dependency that enforces the key when one is set (None: open access). It is
    a coroutine: FastAPI runs a plain function dependency in its thread pool, a thread hop on
    every request for a check that never blocks."""
    expected = api_key.encode() if api_key else None

    async def require_key(request: Request) -> None:
        if expected is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected):
            raise APIError(
                401,
                "Incorrect or missing API key; send 'Authorization: Bearer <key>'.",
                code="invalid_api_key",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return Depends(require_key)
