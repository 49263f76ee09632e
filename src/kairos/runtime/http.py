"""Running an ASGI app under uvicorn: in the foreground for a `serve` command, or in a
background thread on a free port for tests, benchmarks and notebooks.

The background server is a real socket server (not an in-process transport), so tests exercise
exactly what a client sees: SSE framing, disconnects, headers, body limits.

Shutdown (SIGTERM, Ctrl-C, `stop()`) adds one step to uvicorn's: once no new connection is
accepted, an app that sets `app.state.drain` (an `async (grace_s) -> None`) gets the grace
period to end its open work itself (Andes ends each open stream with a final error event),
so nothing is left for uvicorn to cancel mid-body.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from kairos.runtime.settings import HTTPSettings

LogLevel = str
log = logging.getLogger(__name__)


class DrainingServer(uvicorn.Server):
    """uvicorn, with the app's own `drain` between closing the listeners and uvicorn's wait."""

    def __init__(self, config: uvicorn.Config, app: Any, grace_s: float) -> None:
        super().__init__(config)
        self.app = app
        self.grace_s = grace_s

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        drain = getattr(getattr(self.app, "state", None), "drain", None)
        if drain is not None:
            try:
                await asyncio.wait_for(drain(self.grace_s), self.grace_s + 1.0)
            except Exception:
                log.exception("draining open requests failed; uvicorn cancels what is left")
        await super().shutdown(sockets)


def _config(app: Any, host: str, port: int, log_level: LogLevel, **extra: Any) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        ws="none",  # no websocket routes; also avoids importing the websockets package
        lifespan="on",  # the app's lifespan starts and stops the engine; failing to is fatal
        **extra,
    )


def run_server(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: LogLevel = "info",
    graceful_shutdown_s: int = 5,
) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM), then stop the engine."""
    config = _config(app, host, port, log_level, timeout_graceful_shutdown=graceful_shutdown_s)
    DrainingServer(config, app, graceful_shutdown_s).run()


def serve(app: Any, settings: HTTPSettings) -> None:
    """`run_server` as a server's settings say: host, port, log level and shutdown grace, so
    every `serve` command starts its app the same way."""
    run_server(
        app,
        settings.host,
        settings.port,
        settings.log_level,
        graceful_shutdown_s=settings.graceful_shutdown_s,
    )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


class BackgroundServer:
    """uvicorn in a daemon thread, bound before start so `port` is known (0 = a free port).

    Use as a context manager: `with BackgroundServer(app) as srv: httpx.get(srv.url + "/health")`.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: LogLevel = "warning",
        graceful_shutdown_s: int = 2,
    ) -> None:
        self._sock = _bind(host, port)
        self.host = host
        self.port: int = self._sock.getsockname()[1]
        config = _config(
            app,
            host,
            self.port,
            log_level,
            timeout_graceful_shutdown=graceful_shutdown_s,
            access_log=False,
            log_config=None,
        )
        self.server = DrainingServer(config, app, graceful_shutdown_s)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:54321` (add `/v1` for OpenAI clients)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> BackgroundServer:
        """Start serving; return once the app's startup (engine start) has completed."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the server stopped during startup (see the log)")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"the server did not start within {timeout_s} s")
            time.sleep(0.01)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask uvicorn to exit (open streams get the grace period), then wait for the thread."""
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._sock.close()
        if self._thread.is_alive():
            raise TimeoutError(f"the server did not stop within {timeout_s} s")

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
