"""The HTTP API of the real Orloj server (FastAPI on asyncio; needs the `serve` extra).

`POST /v1/infer` with `{"app": "easy", "slo_ms": 150, "input": {"exit": 1}}` (the `input`
object is the served model's: `{"exit": 1..4, "seed"}` for the early-exit CNN,
`{"tokens": [...], "n_new": 12}` for the decoder, `{"seed"}` for the static CNN; an optional
`"model"` must name the served one). The request goes to the policy-driven dispatcher and the
answer comes when it ended: `{outcome, deadline_met, latency_ms, server_latency_ms, transit_ms,
queue_ms, batch_size, output}`. End to end: a client that stamps `sent_at_ms` (its send time,
Unix epoch ms) gets a deadline that starts then, so time lost before the server (a slow
network, a busy client) counts against it and the policy schedules with the slack really left;
without a stamp the deadline starts at the server's arrival stamp. `latency_ms` counts from the
deadline's start, `server_latency_ms` from the server's arrival.
A request the policy dropped or the worker rejected is still a 200 with `outcome: "timed_out"`:
that is a scheduling result, not a protocol error. Errors use the shared JSON error shape and
name the offending field: 400 malformed or invalid, or an input outside its application's
declared range (e.g. app "chat" declared with `n_new` 4 asked for 48: it would skew that
application's latency profile), 401 bad key, 404 unknown app or model, 413 body too large,
429 too many open requests (with Retry-After), 503 not running or its worker died mid-request
(with Retry-After; the worker is restarted, see `Dispatcher`). `/health` says `ok`,
`restarting` (503) or `failed` (503, the crash-loop bound was hit).
`GET /v1/stats` (JSON), `/health` and `/metrics` (Prometheus) report the run.

Loopback by default; set `api_key` before exposing it. A client that disconnects does not
cancel its request: batches are non-preemptive and policies have no cancel, so it runs and its
answer is discarded.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kairos.orloj.runtime.dispatcher import Dispatcher, Overloaded, Unavailable
from kairos.orloj.runtime.report import OrlojCollector, json_safe, summary
from kairos.orloj.runtime.results import WORKER_EXITED
from kairos.runtime.auth import api_key_dependency
from kairos.runtime.disconnect import ClientGone
from kairos.runtime.errors import APIError, install_error_handlers, strict_validation_error
from kairos.runtime.json_body import read_model
from kairos.runtime.middleware import CLIENT_CLOSED, StatusCounter
from kairos.runtime.prometheus import CONTENT_TYPE, exposition, registry_for
from kairos.runtime.settings import OverloadSettings


class RuntimeSettings(OverloadSettings):
    """How the server listens and protects itself (`kairos.runtime.settings`), and the open
    requests at which it refuses more."""

    max_open: int = Field(1024, ge=1, description="open requests at which new ones get 429")


class InferRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    app: str = Field(min_length=1, max_length=128, description="the caller's application")
    slo_ms: float = Field(gt=0, le=3_600_000, description="deadline = arrival + slo_ms")
    input: dict[str, Any] = Field(description="the served model's input object")
    model: str | None = Field(None, description="if given, must be the served model")
    sent_at_ms: float | None = Field(
        None,
        gt=0,
        description="the client's send time (Unix epoch ms): the deadline starts there, not at "
        "the server's arrival stamp (clocks agree on loopback; a stamp ahead of ours counts 0)",
    )


def transit_ms(sent_at_ms: float | None, now_unix_ms: float) -> float:
    """How long ago the client sent a request, by its stamp: never negative (a client clock
    ahead of ours must not buy a later deadline)."""
    return 0.0 if sent_at_ms is None else max(0.0, now_unix_ms - sent_at_ms)


def _input_error(exc: ValidationError, schema: type[BaseModel]) -> APIError:
    """A 400 naming the field inside `input` (e.g. `input.exit`)."""
    err = strict_validation_error(exc, frozenset(schema.model_fields))
    param = f"input.{err.param}" if err.param else "input"
    message = err.message.replace(f"'{err.param}'", f"'{param}'", 1) if err.param else err.message
    return APIError(400, message, param=param, code=err.code)


def create_app(
    dispatcher: Dispatcher,
    apps: Mapping[str, Sequence[str]] | Collection[str],
    settings: RuntimeSettings | None = None,
    info: Mapping[str, Any] | None = None,
) -> FastAPI:
    """An app serving `dispatcher` for the applications `apps` (a mapping app -> input classes
    also bounds each app's inputs to its classes' range); `info` (e.g. the calibration check)
    is included in `/v1/stats`."""
    settings = settings or RuntimeSettings()
    model = dispatcher.model
    if model is None:
        raise ValueError("the HTTP server needs the dispatcher's served model (its inputs)")
    known = frozenset(apps)
    ranges = (
        {a: model.field_range(cs) for a, cs in apps.items()} if isinstance(apps, Mapping) else {}
    )
    http_counts: Counter[int] = Counter()
    registry = registry_for(OrlojCollector(dispatcher, http_counts))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await dispatcher.start()
        try:
            yield
        finally:
            await dispatcher.stop()

    app = FastAPI(
        title="kairos Orloj", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    install_error_handlers(app)
    app.add_middleware(StatusCounter, counts=http_counts)
    auth = api_key_dependency(settings.api_key)

    def unavailable(message: str) -> APIError:
        return APIError(503, message, code="unavailable", headers={"Retry-After": "1"})

    async def parse(request: Request) -> tuple[InferRequest, BaseModel]:
        req = await read_model(request, InferRequest, settings)
        if req.model is not None and req.model != model.kind:
            raise APIError(
                404,
                f"The model '{req.model}' is not served here; this server serves '{model.kind}'.",
                param="model",
                code="model_not_found",
            )
        if req.app not in known:
            raise APIError(
                404,
                f"Unknown app '{req.app}'; this server knows {sorted(known)}.",
                param="app",
                code="app_not_found",
            )
        try:
            x = model.parse(req.input)
        except ValidationError as exc:
            raise _input_error(exc, model.input_schema) from None
        if (bound := ranges.get(req.app)) is not None:
            field, lo, hi = bound
            value = getattr(x, field)
            if not lo <= value <= hi:
                raise APIError(
                    400,
                    f"'input.{field}' = {value} is outside app '{req.app}''s declared range "
                    f"[{lo}, {hi}].",
                    param=f"input.{field}",
                    code="out_of_app_range",
                )
        return req, x

    @app.post("/v1/infer", dependencies=[auth])
    async def infer(request: Request) -> Response:
        if not dispatcher.running:
            raise unavailable("The Orloj worker is not running.")
        if dispatcher.open_requests >= settings.max_open:  # refuse before reading the body
            raise settings.overloaded(f"The server is overloaded ({dispatcher.open_requests} open)")
        try:
            req, x = await parse(request)
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)
        transit = transit_ms(req.sent_at_ms, time.time() * 1e3)
        try:
            done = await dispatcher.submit(req.app, req.slo_ms, x, transit)
        except Overloaded as exc:
            raise settings.overloaded(f"The server is overloaded: {exc}") from None
        except Unavailable as exc:
            raise unavailable(f"The Orloj worker is not serving: {exc}.") from None
        if done.error == WORKER_EXITED:
            raise unavailable("The Orloj worker died while running this request; retry.")
        if done.error is not None:
            raise APIError(500, f"The model failed on this batch: {done.error}")
        return JSONResponse(
            {
                "id": f"orloj-{done.request_id}",
                "app": done.app,
                "policy": dispatcher.policy.name,
                "model": model.kind,
                "outcome": done.outcome.value,
                "deadline_met": done.outcome.value == "ok",
                "latency_ms": round(done.latency_ms, 3),
                "server_latency_ms": round(done.server_latency_ms, 3),
                "transit_ms": round(done.transit_ms, 3),
                "queue_ms": round(done.queue_ms, 3),
                "batch_size": done.batch_size,
                "rejected": done.rejected,
                "output": done.output,
            }
        )

    @app.get("/v1/stats", dependencies=[auth])
    async def stats() -> JSONResponse:
        body = {**summary(dispatcher), "apps": sorted(known), **dict(info or {})}
        return JSONResponse(json_safe(body))

    @app.get("/health")
    async def health() -> JSONResponse:
        ok = dispatcher.running
        state = "ok" if ok else dispatcher.state if dispatcher.state != "ok" else "unavailable"
        body = {"status": state, "policy": dispatcher.policy.name, "restarts": dispatcher.restarts}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(exposition(registry), media_type=CONTENT_TYPE)

    return app
