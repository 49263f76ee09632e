"""Reading a JSON request body with a size limit, for every kairos server.

The limit is enforced while the body streams in (and up front from Content-Length), so an
oversized upload is refused before it is buffered in full. Every failure is an `APIError` with
a message the client can act on: 415 not declared as JSON, 413 too large, 400 empty, not JSON,
NaN/Infinity or a number too large to be finite (`1e999`), nested too deeply, not an object.
A client that leaves mid-upload raises `ClientGone`; one that has not sent the whole body
within `timeout_s` gets 408, so connections that stall mid-body cannot pile up.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request

from kairos.runtime.disconnect import ClientGone
from kairos.runtime.errors import APIError, strict_validation_error
from kairos.runtime.settings import HTTPSettings

M = TypeVar("M", bound=BaseModel)

MAX_DEPTH = 64  # objects and arrays nested deeper than any request schema needs


async def read_model(
    request: Request, schema: type[M], settings: HTTPSettings, names: frozenset[str] | None = None
) -> M:
    """The body validated by a strict `schema`: a 400 names the bad field, or the unknown one
    (`names`: the field names a message may quote; default the schema's own)."""
    body = await read_json(request, settings)
    try:
        return schema.model_validate(body)
    except ValidationError as exc:
        raise strict_validation_error(exc, names or frozenset(schema.model_fields)) from None


async def read_json(request: Request, settings: HTTPSettings) -> dict[str, Any]:
    """The body as a JSON object under the server's limits: at most `max_body_bytes` (refused
    before reading all of it), received in full within `body_timeout_s`."""
    limit, timeout_s = settings.max_body_bytes, settings.body_timeout_s
    require_json_content_type(request)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    try:
        async with asyncio.timeout(timeout_s):
            body = await _read(request, limit)
    except TimeoutError:
        raise APIError(
            408, f"The request body was not received within {timeout_s:g} s.", code="timeout"
        ) from None
    if not body.strip():
        raise APIError(400, "The request body is empty; send a JSON object.")
    _check_depth(body)
    try:
        payload = json.loads(bytes(body), parse_constant=_no_constant, parse_float=_finite)
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


async def _read(request: Request, limit: int) -> bytearray:
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise too_large(limit)
    except ClientDisconnect:
        raise ClientGone() from None
    return body


def require_json_content_type(request: Request) -> None:
    """415 unless the body is declared `application/json` (or a `+json` type): a form post or
    a missing header is a client bug that parsing would otherwise guess around."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json" and not (
        kind.startswith("application/") and kind.endswith("+json")
    ):
        shown = f"'{kind}'" if kind else "no Content-Type"
        raise APIError(
            415,
            f"The request body must be JSON sent with 'Content-Type: application/json'; "
            f"this one has {shown}.",
            code="unsupported_media_type",
        )


def _check_depth(body: bytearray) -> None:
    """400 for nesting past `MAX_DEPTH`, counted on the raw bytes before the parser can recurse
    that deep (Python's parser raises RecursionError, which used to surface as a 500). The
    byte-by-byte walk runs only when the body has enough brackets to be that deep."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > MAX_DEPTH:
                raise APIError(400, f"The JSON body is nested more than {MAX_DEPTH} levels deep.")
        elif byte in (0x5D, 0x7D):
            depth -= 1


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a valid JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:32]} is too large to be a finite number")
    return value


def too_large(limit: int) -> APIError:
    return APIError(
        413, f"The request body is larger than {limit} bytes.", code="request_too_large"
    )
