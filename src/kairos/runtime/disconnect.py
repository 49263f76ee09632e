"""Noticing that the HTTP client has gone, and closing async streams without raising.

A request whose client has left must stop costing accelerator time at once (a queued request
can wait long under overload). For a streaming engine, closing its iterator is the abort signal
(Andes' `EngineClient.generate`), so every path out of a handler closes it. Shared by every
system's server.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
from starlette.requests import Request

log = logging.getLogger(__name__)

T = TypeVar("T")


class ClientGone(Exception):
    """The HTTP client disconnected before the answer was ready."""


async def close_quietly(events: AsyncIterator[Any]) -> None:
    """`aclose()` a stream, shielded from cancellation; log (never raise) failures."""
    aclose = getattr(events, "aclose", None)
    if aclose is None:
        return
    with anyio.CancelScope(shield=True):
        try:
            await aclose()
        except Exception:
            log.exception("closing a stream failed")


async def until_disconnected(request: Request, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work()` unless the client disconnects first; then cancel it and raise ClientGone.

    Call only after the body has been read: the watcher consumes ASGI receive messages and
    waits for `http.disconnect`.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    async def watch(scope: anyio.CancelScope) -> None:
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                scope.cancel()
                return

    async with anyio.create_task_group() as group:
        group.start_soon(watch, group.cancel_scope)
        try:
            outcome.append(await work())
        except Exception as exc:  # re-raised outside so it is not wrapped in an ExceptionGroup
            failure.append(exc)
        group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    if not outcome:
        raise ClientGone()
    return outcome[0]
