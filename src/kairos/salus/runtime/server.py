"""The HTTP API of the Salus execution service (FastAPI; needs the `serve` extra).

`POST /v1/jobs` `{name, factory: "pkg.module:fn", kind: train|infer, iterations, expected_s?,
priority?, options?}` -> 201 and the job; the service builds and profiles it, then the policy
admits it to a lane and runs its iterations. `GET /v1/jobs` lists jobs, `GET /v1/jobs/{id}`
reads one (`?wait_s=N` waits up to N seconds for it to end), `POST /v1/jobs/{id}/cancel` stops
it at its next iteration boundary. `GET /v1/stats` has the lanes and memory; `/health` and
`/metrics` (Prometheus: jobs by state, lanes, used bytes, iterations, HTTP answers).
`GET /v1/jobs/{id}/checkpoint` returns the model's weights as a safetensors file, taken at the
lane's next iteration boundary (an auxiliary call: not charged to the job, no decision changed;
409 once the job has ended, 504 if no boundary came within `wait_s`).

Errors use the shared JSON shape and name the field: 400 malformed or invalid (a factory outside
the allowed modules is a 400 on `factory`), 401 bad key, 404 unknown job, 413 body too large,
429 too many open jobs, 503 not running. Loopback by default; set `api_key` before exposing it.
Factories are imported only from allow-listed module prefixes (`allow_modules`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from kairos.runtime.auth import api_key_dependency
from kairos.runtime.disconnect import ClientGone
from kairos.runtime.errors import APIError, install_error_handlers
from kairos.runtime.json_body import read_model
from kairos.runtime.middleware import CLIENT_CLOSED, StatusCounter
from kairos.runtime.prometheus import CONTENT_TYPE, exposition, registry_for
from kairos.salus.runtime.metrics import SalusCollector
from kairos.salus.runtime.service import FieldError, JobEnded, SalusService, Unavailable
from kairos.salus.runtime.settings import ServiceSettings
from kairos.salus.runtime.spec import JobSpec

MAX_WAIT_S = 60.0


def create_app(service: SalusService, settings: ServiceSettings | None = None) -> FastAPI:
    """An app serving `service`, started and stopped with the app."""
    settings = settings or service.settings
    http_counts: Counter[int] = Counter()
    registry = registry_for(SalusCollector(service, http_counts))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.stop()

    app = FastAPI(
        title="kairos Salus", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    install_error_handlers(app)

    async def drain(grace_s: float) -> None:
        """SIGTERM: cancel the open jobs (each at its running iteration's end) so that clients
        waiting on them are answered before uvicorn closes their connections."""
        await service.stop()

    app.state.drain = drain
    app.add_middleware(StatusCounter, counts=http_counts)
    auth = api_key_dependency(settings.api_key)

    def running() -> None:
        if not service.running:
            raise APIError(
                503, "The Salus service is not running.", code="unavailable",
                headers={"Retry-After": "1"},
            )  # fmt: skip

    def job_or_404(job_id: int) -> dict[str, object]:
        record = service.jobs.get(job_id)
        if record is None:
            raise APIError(404, f"No job {job_id} on this service.", param="id", code="not_found")
        return record.as_json()

    @app.post("/v1/jobs", dependencies=[auth])
    async def submit(request: Request) -> Response:
        running()
        if service.open_jobs >= settings.max_jobs:  # refuse before reading the body
            raise settings.overloaded(f"The service holds {service.open_jobs} open jobs")
        try:
            spec = await read_model(request, JobSpec, settings)
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)
        try:
            record = service.submit(spec)
        except FieldError as exc:
            raise APIError(
                400, f"Invalid value for '{exc.field}': {exc}.", param=exc.field
            ) from None
        except Unavailable as exc:
            raise APIError(503, str(exc), code="unavailable") from None
        return JSONResponse(record.as_json(), status_code=201)

    @app.get("/v1/jobs", dependencies=[auth])
    async def list_jobs() -> JSONResponse:
        return JSONResponse({"jobs": [r.as_json() for r in service.jobs.values()]})

    @app.get("/v1/jobs/{job_id}", dependencies=[auth])
    async def get_job(
        job_id: int, wait_s: float = Query(0.0, ge=0.0, le=MAX_WAIT_S)
    ) -> JSONResponse:
        job_or_404(job_id)
        if wait_s > 0:
            await service.wait(job_id, wait_s)
        return JSONResponse(job_or_404(job_id))

    @app.get("/v1/jobs/{job_id}/checkpoint", dependencies=[auth])
    async def checkpoint(
        job_id: int, wait_s: float = Query(30.0, gt=0.0, le=MAX_WAIT_S)
    ) -> Response:
        job_or_404(job_id)
        try:
            data = await service.checkpoint(job_id, wait_s)
        except JobEnded as exc:
            raise APIError(409, f"{exc}.", param="id", code="job_ended") from None
        except TimeoutError:
            raise APIError(
                504, f"Job {job_id} reached no iteration boundary within {wait_s} s.",
                code="timeout",
            ) from None  # fmt: skip
        name = f"job-{job_id}.safetensors"
        return Response(
            data,
            media_type="application/octet-stream",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    @app.post("/v1/jobs/{job_id}/cancel", dependencies=[auth])
    async def cancel(job_id: int) -> JSONResponse:
        job_or_404(job_id)
        service.cancel(job_id)
        return JSONResponse(job_or_404(job_id))

    @app.get("/v1/stats", dependencies=[auth])
    async def stats() -> JSONResponse:
        return JSONResponse(service.stats())

    @app.get("/health")
    async def health() -> JSONResponse:
        ok = service.running
        body = {"status": "ok" if ok else "unavailable", "policy": service.policy_name}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(exposition(registry), media_type=CONTENT_TYPE)

    return app
