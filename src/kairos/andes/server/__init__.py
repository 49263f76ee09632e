"""OpenAI-compatible HTTP server for the Andes engine: `/v1/chat/completions`,
`/v1/completions` (SSE streaming with QoE as an extra body field), `/v1/models`, `/health`,
`/metrics` and the chat page.

Needs the `serve` extra (fastapi, uvicorn). Typical use::

    settings = ServerSettings(api_key="...")
    serve(create_app(engine, settings), settings)
"""

from __future__ import annotations

from kairos.andes.server.app import create_app
from kairos.andes.server.settings import ServerSettings
from kairos.runtime.http import BackgroundServer, run_server, serve

__all__ = ["BackgroundServer", "ServerSettings", "create_app", "run_server", "serve"]
