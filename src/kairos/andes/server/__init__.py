"""OpenAI-compatible HTTP server for the Andes engine: `/v1/chat/completions`,
`/v1/completions` (SSE streaming with QoE as an extra body field), `/v1/models`, `/health`,
`/metrics` and the chat page.

Needs the `serve` extra (fastapi, uvicorn). Typical use::

    app = create_app(engine, ServerSettings(api_key="..."))
    run_server(app, host="127.0.0.1", port=8000)
"""

from __future__ import annotations

from typing import Any

from kairos.andes.server.app import create_app
from kairos.andes.server.settings import ServerSettings
from kairos.runtime.http import BackgroundServer, run_server


def run_with_settings(app: Any, settings: ServerSettings) -> None:
    """`run_server` with host, port, log level and shutdown grace from `settings`."""
    run_server(
        app,
        settings.host,
        settings.port,
        settings.log_level,
        graceful_shutdown_s=settings.graceful_shutdown_s,
    )


__all__ = ["BackgroundServer", "ServerSettings", "create_app", "run_server", "run_with_settings"]
