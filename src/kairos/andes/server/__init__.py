"""OpenAI-compatible HTTP server for the Andes engine: `/v1/chat/completions`,
`/v1/completions` (SSE streaming with QoE as an extra body field), `/v1/models`, `/health`,
`/metrics` and the chat page.

Needs the `serve` extra (fastapi, uvicorn). Typical use::

    app = create_app(engine, ServerSettings(api_key="..."))
    run_server(app, host="127.0.0.1", port=8000)
"""

from __future__ import annotations

from kairos.andes.server.app import create_app
from kairos.andes.server.run import BackgroundServer, run_server, run_with_settings
from kairos.andes.server.settings import ServerSettings

__all__ = ["BackgroundServer", "ServerSettings", "create_app", "run_server", "run_with_settings"]
