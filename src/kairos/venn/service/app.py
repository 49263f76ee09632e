"""The HTTP API of the Venn resource manager (FastAPI; needs the `serve` extra).

Jobs: `POST /v1/jobs` `{name, requirement: {min_cpu_ghz, min_ram_gb, min_fp16_mem_mb,
min_android_os, cohort_modulus?, cohort_residue?}, demand, rounds, deadline_s?, min_resp_frac?}`
(membership: only devices whose private code is the residue modulo the modulus, see
`offers`); `POST /v1/jobs/{id}/rounds` `{round?, demand?}` opens the next round;
`GET /v1/jobs[/{id}]`. A registration may carry an `Idempotency-Key` header: retried with the
same key and body, it returns the first job.
Devices: `POST /v1/checkin` `{device_id}` -> `{offers: [{offer_id, requirement}], retry_after_s}`;
`POST /v1/offers/{offer_id}/accept` `{device_id, capability?}` -> the assignment (or
`assigned: false`); `POST /v1/results` `{device_id, job_id, round}`. A device never sends its
eligibility attributes: it tests the offered requirements itself (see `core`).
Errors use the shared JSON shape and name the field: 400 malformed, 401 bad key, 404 unknown
job/offer/assignment, 409 out of order or expired, 413 too large, 422 an idempotency key reused
for another body. `/health`, `/metrics`.
Loopback by default; set `api_key` before exposing it. With `decision_log`, the driver writes
every input and decision to that file (`kairos.venn.decisions`; replayed by
`kairos.venn.rerun`).

The store (`db`): a SQLite file runs the single-process service (`core.VennService`, the
driver in memory, persisted to the file); a `postgresql://` URL runs a stateless front-end
(`shared.SharedService`), one of any number on that database, which judges deadlines and
refreshes its snapshot every `refresh_s` in the background. A database that cannot be reached
answers 503 (retry), never a half-done write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from kairos.decisions import DecisionLog
from kairos.runtime.auth import api_key_dependency
from kairos.runtime.errors import APIError, install_error_handlers
from kairos.runtime.json_body import read_model
from kairos.runtime.middleware import StatusCounter
from kairos.runtime.prometheus import CONTENT_TYPE, exposition, registry_for
from kairos.runtime.settings import MIN_BODY_BYTES, HTTPSettings
from kairos.venn.decisions import CODEC, SYSTEM
from kairos.venn.service.core import ServiceError, VennService, log_meta
from kairos.venn.service.metrics import VennCollector
from kairos.venn.service.shared import SharedService
from kairos.venn.service.store_api import StoreUnavailable
from kairos.venn.service.stores import is_postgres, open_store

log = logging.getLogger(__name__)
Service = VennService | SharedService

M = TypeVar("M", bound=BaseModel)
Id = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")


class ServiceSettings(HTTPSettings):
    """How the service listens and protects itself (`kairos.runtime.settings`), where it keeps
    its state and which policy it runs. Its bodies are small JSON objects: 16 KiB at most."""

    db: str = Field("venn.sqlite", description="a SQLite file, or a postgresql:// URL")
    refresh_s: float = Field(0.1, gt=0, description="a front-end's snapshot period (PostgreSQL)")
    policy: str = "venn"
    max_body_bytes: int = Field(16 * 1024, ge=MIN_BODY_BYTES)
    retry_after_s: float = Field(1.0, ge=0, description="check-in hint when nothing is offered")
    decision_log: str | None = Field(None, description="write the driver's decisions here")


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    min_cpu_ghz: float = Field(0.0, ge=0)
    min_ram_gb: float = Field(0.0, ge=0)
    min_fp16_mem_mb: float = Field(0.0, ge=0)
    min_android_os: float = Field(0.0, ge=0)
    cohort_modulus: int = Field(1, ge=1, le=2**52, description="membership: 1 for none")
    cohort_residue: int = Field(0, ge=0, lt=2**52)


class JobIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=128)
    requirement: Thresholds = Field(default_factory=Thresholds)
    demand: int = Field(ge=1, le=100_000, description="devices per round")
    rounds: int = Field(ge=1, le=100_000)
    deadline_s: float = Field(600.0, gt=0)
    min_resp_frac: float = Field(0.8, gt=0, le=1)


class RoundIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    round: int | None = Field(None, ge=0)
    demand: int | None = Field(None, ge=1, le=100_000)


class CheckinIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    device_id: str = Id


class AcceptIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    device_id: str = Id
    capability: float = Field(1.0, gt=0, le=1e6, description="speed score, for tiering")


class ResultIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    device_id: str = Id
    job_id: str = Id
    round: int = Field(ge=0)


KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")  # printable ASCII, no spaces


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not KEY_PATTERN.match(key):
        raise APIError(
            400,
            "Idempotency-Key must be 1 to 255 printable ASCII characters without spaces "
            "(a UUID is a good key).",
            param="Idempotency-Key",
        )
    return key


def fingerprint(job: JobIn) -> str:
    """What a retried registration must repeat: the body, without membership keys when the
    job asks for none (so a plain job's fingerprint is the same as before they existed)."""
    if job.requirement.cohort_modulus > 1:
        return job.model_dump_json()
    return job.model_dump_json(exclude={"requirement": {"cohort_modulus", "cohort_residue"}})


def create_app(settings: ServiceSettings | None = None, db: str | Path | None = None) -> FastAPI:
    """An app over the SQLite file `db` (default: `settings.db`); the state is rebuilt from it
    at startup, so a new app on the same file continues where the last one stopped."""
    settings = settings or ServiceSettings()
    http_counts: Counter[int] = Counter()
    holder: dict[str, Service] = {}
    registry = registry_for(VennCollector(lambda: holder.get("svc"), http_counts))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        spec = str(db if db is not None else settings.db)
        if is_postgres(spec) and settings.decision_log is not None:
            raise ValueError("a decision log records one process's driver: not with PostgreSQL")
        store = open_store(spec)
        record = None
        service: Service
        try:
            if is_postgres(spec):
                service = SharedService(store, policy=settings.policy)
            else:
                service = VennService(store, policy=settings.policy)
                if settings.decision_log is not None:  # from here on: after the rebuild
                    record = DecisionLog(settings.decision_log, CODEC, SYSTEM, log_meta(service))
                    service.driver.recorder = record
        except BaseException:
            store.close()  # (and its lock) for the next attempt
            raise
        holder["svc"] = service
        ticking = None
        if isinstance(service, SharedService):
            ticking = asyncio.create_task(_tick(service, settings.refresh_s))
        try:
            yield
        finally:
            holder.pop("svc")
            if ticking is not None:
                ticking.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticking
            if isinstance(service, VennService):
                service.driver.stop()
            store.close()
            if record is not None:
                record.close()

    app = FastAPI(
        title="kairos Venn", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    install_error_handlers(app)
    app.add_middleware(StatusCounter, counts=http_counts)
    auth = api_key_dependency(settings.api_key)

    def svc() -> Service:
        if "svc" not in holder:
            raise APIError(503, "The Venn service is not running.", code="unavailable")
        return holder["svc"]

    async def parse(request: Request, schema: type[M]) -> M:
        names = frozenset(schema.model_fields) | frozenset(Thresholds.model_fields)
        return await read_model(request, schema, settings, names)

    @app.exception_handler(ServiceError)
    async def on_refused(request: Request, exc: ServiceError) -> JSONResponse:
        """The core's refusals (kept free of FastAPI) in the shared error shape."""
        return APIError(exc.status, exc.message, param=exc.param).response()

    @app.exception_handler(StoreUnavailable)
    async def on_unavailable(request: Request, exc: StoreUnavailable) -> JSONResponse:
        return APIError(503, f"{exc}; retry shortly.", code="unavailable").response()

    @app.post("/v1/jobs", dependencies=[auth], status_code=201)
    async def register(request: Request) -> JSONResponse:
        """With an `Idempotency-Key` header, a retry of a registration whose answer was lost
        returns the job the first one made (200, `Idempotent-Replayed: true`), not a twin."""
        key = idempotency_key(request)
        j = await parse(request, JobIn)
        if j.requirement.cohort_residue >= j.requirement.cohort_modulus:
            raise APIError(
                400,
                "requirement.cohort_residue must be below requirement.cohort_modulus.",
                param="requirement.cohort_residue",
            )
        s = svc()
        job, replayed = s.register(
            j.name,
            j.requirement.model_dump(),
            j.demand,
            j.rounds,
            j.deadline_s,
            j.min_resp_frac,
            key=key,
            fingerprint=fingerprint(j),
        )
        if replayed:
            return JSONResponse(s.describe(job), headers={"Idempotent-Replayed": "true"})
        return JSONResponse(s.describe(job), status_code=201)

    @app.get("/v1/jobs", dependencies=[auth])
    async def list_jobs() -> JSONResponse:
        s = svc()
        return JSONResponse({"jobs": [s.describe(j) for j in s.store.jobs()]})

    @app.get("/v1/jobs/{job_id}", dependencies=[auth])
    async def get_job(job_id: str) -> JSONResponse:
        s = svc()
        return JSONResponse(s.describe(s.job(job_id)))

    @app.post("/v1/jobs/{job_id}/rounds", dependencies=[auth], status_code=201)
    async def post_round(job_id: str, request: Request) -> JSONResponse:
        r = await parse(request, RoundIn)
        s = svc()
        s.post_round(job_id, r.round, r.demand)
        return JSONResponse(s.describe(s.job(job_id)), status_code=201)

    @app.post("/v1/checkin", dependencies=[auth])
    async def checkin(request: Request) -> JSONResponse:
        await parse(request, CheckinIn)
        offers = svc().offers()
        return JSONResponse({"offers": offers, "retry_after_s": settings.retry_after_s})

    @app.post("/v1/offers/{oid}/accept", dependencies=[auth])
    async def accept(oid: str, request: Request) -> JSONResponse:
        a = await parse(request, AcceptIn)
        return JSONResponse(svc().accept(oid, a.device_id, a.capability))

    @app.post("/v1/results", dependencies=[auth])
    async def result(request: Request) -> JSONResponse:
        r = await parse(request, ResultIn)
        return JSONResponse(svc().result(r.device_id, r.job_id, r.round))

    @app.get("/health")
    async def health() -> JSONResponse:
        ok = "svc" in holder
        body = {"status": "ok" if ok else "unavailable", "policy": settings.policy}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        svc()  # 503 before startup
        return PlainTextResponse(exposition(registry), media_type=CONTENT_TYPE)

    return app


async def _tick(service: SharedService, period_s: float) -> None:
    """Judge due deadlines and refresh the snapshot every `period_s`; a database outage is
    waited out (the requests meanwhile answer 503)."""
    while True:
        await asyncio.sleep(period_s)
        try:
            service.tick()
        except StoreUnavailable as exc:
            log.warning("venn front-end: %s", exc)
