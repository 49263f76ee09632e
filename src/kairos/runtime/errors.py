"""JSON errors for every kairos server: `{"error": {message, type, param, code}}`.

The shape is OpenAI's: their clients (the official SDKs among them) read it to raise a typed
exception with the server's message, and it is just as readable for our own APIs, so a bad
request is explained to the user instead of surfacing as an opaque status code. Validation
failures name the offending field as `param`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)


def _error_type(status: int) -> str:
    """OpenAI's error type for a status: the client's fault, a rate limit, or ours."""
    if status == 429:
        return "rate_limit_exceeded"
    return "invalid_request_error" if 400 <= status < 500 else "server_error"


class APIError(Exception):
    """An error the server answers with on purpose; raised anywhere in a handler."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type or _error_type(status)
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.param, self.code)

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_body(
    message: str, type: str = "server_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """The JSON body of an OpenAI error (also sent as an SSE event when a stream fails)."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _param_path(loc: Iterable[int | str], field_names: frozenset[str]) -> str | None:
    """`("messages", 0, "content")` -> `messages[0].content`, dropping pydantic's union tags."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in field_names:
            path += f".{part}" if path else part
    return path or None


def _describe(err: Mapping[str, Any]) -> tuple[str, str]:
    """A human message and an OpenAI-style code for one pydantic error."""
    kind = str(err.get("type", ""))
    msg = str(err.get("msg", "invalid value"))
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if kind == "missing":
        return "missing", "missing_required_parameter"
    if kind.endswith("_type") or kind.endswith("_parsing") or kind == "literal_error":
        return msg, "invalid_type" if kind != "literal_error" else "invalid_value"
    if kind == "extra_forbidden":
        loc = err.get("loc", ())
        return f"unknown field {str(loc[-1])!r}" if loc else "unknown field", "unknown_parameter"
    return msg, "invalid_value"


def validation_error(exc: ValidationError, field_names: frozenset[str]) -> APIError:
    """Turn a pydantic failure into one 400 that names the most specific offending field.

    A union field reports one error per member; the deepest location is the member the client
    meant (a dict meant as the object form), so that one is reported.
    """
    errors = exc.errors(include_url=False)
    if not errors:
        return APIError(400, "Invalid request.")
    field = errors[0]["loc"][:1]
    same_field = [e for e in errors if e["loc"][:1] == field]
    best = max(same_field, key=lambda e: len(e["loc"]))
    param = _param_path(best["loc"], field_names)
    msg, code = _describe(best)
    if code == "missing_required_parameter":
        message = f"Missing required parameter: '{param}'."
    elif param:
        message = f"Invalid value for '{param}': {msg}."
    else:
        message = f"Invalid request: {msg}."
    others = len(errors) - len(same_field)
    if others:
        message += f" ({others} more problem(s) in other fields)"
    return APIError(400, message, param=param, code=code)


def strict_validation_error(exc: ValidationError, field_names: frozenset[str]) -> APIError:
    """`validation_error` for schemas that forbid extra fields: an unknown field the client
    sent is named too (it is not among the schema's own names)."""
    unknown = {str(e["loc"][-1]) for e in exc.errors() if e["type"] == "extra_forbidden"}
    return validation_error(exc, field_names | unknown)


def install_error_handlers(app: FastAPI) -> None:
    """Make FastAPI's own failures (404 route, 405, 422, crashes) answer in OpenAI's shape."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, APIError)
        return exc.response()

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return APIError(
            exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None) or {}
        ).response()

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        names = frozenset(str(p) for e in exc.errors() for p in e.get("loc", ()))
        loc = [p for p in (exc.errors()[0].get("loc", ()) if exc.errors() else ()) if p != "body"]
        param = _param_path(loc, names)
        msg = exc.errors()[0].get("msg", "invalid request") if exc.errors() else "invalid request"
        return APIError(400, f"Invalid value for '{param}': {msg}.", param=param).response()

    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error serving %s %s", request.method, request.url.path)
        return APIError(500, "internal server error (see the server log)").response()

    app.add_exception_handler(APIError, on_api_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(Exception, on_crash)
