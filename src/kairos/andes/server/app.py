"""The FastAPI application: OpenAI routes over an `EngineClient`, plus health, metrics and the
chat page.

`create_app` takes the engine as an argument (any object satisfying `EngineClient`), so the same
app serves the torch engine in production and a fake in the HTTP tests. The app starts and
stops the engine with its own lifespan.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles

from kairos.andes.engine.api import EngineClient
from kairos.andes.server.errors import APIError, install_error_handlers
from kairos.andes.server.generation import GenerationHandler
from kairos.andes.server.prometheus import CONTENT_TYPE, AndesCollector, ServerCounters
from kairos.andes.server.protocol import ModelCard, ModelList
from kairos.andes.server.settings import ServerSettings
from kairos.runtime.auth import api_key_dependency
from kairos.runtime.middleware import StatusCounter
from kairos.runtime.prometheus import exposition, registry_for

STATIC_DIR = Path(__file__).parent / "static"


def _mount_static(app: FastAPI, directory: Path) -> None:
    """The chat page (written elsewhere): `/` is its index.html, `/static/*` its assets."""
    app.mount("/static", StaticFiles(directory=directory), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        page = directory / "index.html"
        if not page.is_file():
            raise APIError(404, "no chat page is installed", code="not_found")
        return FileResponse(page, media_type="text/html")


def create_app(engine: EngineClient, settings: ServerSettings | None = None) -> FastAPI:
    """An OpenAI-compatible app serving `engine`; see `ServerSettings` for the knobs."""
    settings = settings or ServerSettings()
    counters = ServerCounters()
    generation = GenerationHandler(engine, settings, counters)
    registry = registry_for(AndesCollector(engine.stats, counters))
    started = int(time.time())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await engine.start()
        try:
            yield
        finally:
            await engine.shutdown()

    app = FastAPI(
        title="kairos Andes",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.settings = settings
    app.state.counters = counters
    drain = getattr(engine, "drain", None)
    if drain is not None:  # graceful shutdown ends open streams with a final error event
        app.state.drain = drain
    install_error_handlers(app)
    app.add_middleware(StatusCounter, counts=counters.http_responses)
    auth = api_key_dependency(settings.api_key)

    @app.post("/v1/chat/completions", dependencies=[auth])
    async def chat_completions(request: Request) -> Response:
        return await generation.handle(request, "chat")

    @app.post("/v1/completions", dependencies=[auth])
    async def completions(request: Request) -> Response:
        return await generation.handle(request, "completion")

    @app.get("/v1/models", dependencies=[auth])
    async def models() -> JSONResponse:
        card = ModelCard(id=engine.model_name, created=started)
        return JSONResponse(ModelList(data=[card]).model_dump())

    @app.get("/health")
    async def health() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(exposition(registry), media_type=CONTENT_TYPE)

    if settings.serve_static and STATIC_DIR.is_dir():
        _mount_static(app, STATIC_DIR)
    return app
