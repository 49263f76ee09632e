"""Counting HTTP answers by status for `/metrics`, as a plain ASGI wrapper (every server).

A pure ASGI middleware (not Starlette's BaseHTTPMiddleware) so that streaming responses pass
through untouched and client disconnects still reach the handlers.
"""

from __future__ import annotations

from collections import Counter

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CLIENT_CLOSED = 499  # nginx's code for "client closed the connection before the answer"


class StatusCounter:
    """Adds one to `counts[status]` per HTTP request (499 if the client left first)."""

    def __init__(self, app: ASGIApp, counts: Counter[int]) -> None:
        self.app = app
        self.counts = counts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status: int | None = None

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        except BaseException:
            status = status or 500  # Starlette's outer error middleware answers 500
            raise
        finally:
            self.counts[status or CLIENT_CLOSED] += 1
