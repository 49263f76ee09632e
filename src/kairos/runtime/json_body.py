"""Reading a JSON request body with a size limit, for every kairos server.

The limit is enforced while the body streams in (and up front from Content-Length), so an
oversized upload is refused before it is buffered in full. Every failure is an `APIError` with
a message the client can act on: 413 too large, 400 empty, not JSON, NaN/Infinity, not an
object. A client that leaves mid-upload raises `ClientGone`.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import ClientDisconnect, Request

from kairos.runtime.disconnect import ClientGone
from kairos.runtime.errors import APIError


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The body as a JSON object, refusing more than `limit` bytes before reading all of it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise too_large(limit)
    except ClientDisconnect:
        raise ClientGone() from None
    if not body.strip():
        raise APIError(400, "The request body is empty; send a JSON object.")
    try:
        payload = json.loads(bytes(body), parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise APIError(
            400,
            f"We could not parse the JSON body of your request: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno}).",
        ) from None
    except ValueError as exc:  # bad UTF-8, or NaN / Infinity
        raise APIError(400, f"We could not parse the JSON body of your request: {exc}.") from None
    if not isinstance(payload, dict):
        raise APIError(400, "The request body must be a JSON object.")
    return payload


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a valid JSON number")


def too_large(limit: int) -> APIError:
    return APIError(
        413, f"The request body is larger than {limit} bytes.", code="request_too_large"
    )
