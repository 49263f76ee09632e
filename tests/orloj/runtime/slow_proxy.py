"""A TCP proxy on a real socket that holds back what the client sends: a slow network before
the server, which the server's own clock cannot see.

Each chunk from the client is forwarded `delay_s()` after it arrived (in order on its
connection: a chunk never overtakes the one before it); answers come back at once. It runs its
own event loop in a thread, so it works beside any server and client."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


async def _pipe(
    src: asyncio.StreamReader, dst: asyncio.StreamWriter, delay_s: Callable[[], float] | None
) -> None:
    loop = asyncio.get_running_loop()
    last = 0.0  # when the previous chunk of this direction was due
    try:
        while chunk := await src.read(65536):
            if delay_s is not None:
                last = max(last, loop.time() + delay_s())
                await asyncio.sleep(last - loop.time())
            dst.write(chunk)
            await dst.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            dst.close()


@contextmanager
def slow_proxy(upstream_port: int, delay_s: Callable[[], float]) -> Iterator[str]:
    """A proxy to 127.0.0.1:`upstream_port` whose client-to-server bytes wait `delay_s()`
    (drawn per chunk); yields its URL."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: dict[str, object] = {}

    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
            await asyncio.gather(_pipe(reader, up_writer, delay_s), _pipe(up_reader, writer, None))
        finally:
            writer.close()
            handlers.discard(task)

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        state["port"] = server.sockets[0].getsockname()[1]
        stop = asyncio.Event()
        state["stop"] = stop
        ready.set()
        async with server:
            await stop.wait()
        for task in list(handlers):  # connections still open: close both ends
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{state['port']}"
    finally:
        stop = state["stop"]
        assert isinstance(stop, asyncio.Event)
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
