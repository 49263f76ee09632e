"""Server-sent events as OpenAI-compatible servers stream them, parsed from raw bytes.

The parser is line based: every complete `data:` line is one event (OpenAI, vLLM and our
server put one JSON object on each `data:` line and never split one over several lines), so
an event is available the moment its line is complete, which keeps chunk timestamps tight.
Bytes arrive in arbitrary pieces: a line may be split across reads, and one read may hold
several events; the parser buffers the incomplete tail. Lines end with `\\n`, `\\r\\n` or `\\r`.
`event:` lines name the type of the following data line (`event: error` marks an error event);
a blank line resets it; comments (`:` lines) and other fields (`id:`, `retry:`) are ignored.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any

DONE = "[DONE]"


@dataclass(frozen=True)
class SSEEvent:
    data: str
    event: str = "message"

    @property
    def done(self) -> bool:
        return self.data.strip() == DONE


class SSEParser:
    """Incremental parser: `feed(bytes)` returns the events completed by those bytes."""

    def __init__(self) -> None:
        self._buf = b""
        self._event = "message"

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buf += chunk
        out: list[SSEEvent] = []
        while True:
            cut, skip = self._line_end()
            if cut < 0:
                return out
            line = self._buf[:cut].decode("utf-8", errors="replace")
            self._buf = self._buf[cut + skip :]
            event = self._line(line)
            if event is not None:
                out.append(event)

    def close(self) -> list[SSEEvent]:
        """Events in a final line that ended without a newline (the stream closed)."""
        if not self._buf:
            return []
        line = self._buf.decode("utf-8", errors="replace").rstrip("\r")
        self._buf = b""
        event = self._line(line)
        return [event] if event is not None else []

    def _line_end(self) -> tuple[int, int]:
        """Index of the first line terminator and its length; (-1, 0) if none is complete."""
        lf = self._buf.find(b"\n")
        cr = self._buf.find(b"\r")
        if cr < 0 or 0 <= lf < cr:
            return lf, 1 if lf >= 0 else 0
        if cr + 1 == len(self._buf):
            return -1, 0  # wait: this "\r" may be the first half of "\r\n"
        return cr, 2 if self._buf[cr + 1] == 0x0A else 1

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            self._event = "message"
            return None
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value.strip() or "message"
            return None
        if name == "data":
            return SSEEvent(value, self._event)
        return None


async def sse_payloads(body: AsyncIterable[bytes]) -> AsyncIterator[Any]:
    """The JSON payload of every `data:` event of a byte stream, up to `data: [DONE]`."""
    parser = SSEParser()
    async for piece in body:
        for event in parser.feed(piece):
            if event.done:
                return
            yield json.loads(event.data)
    for event in parser.close():
        if not event.done:
            yield json.loads(event.data)


@dataclass(frozen=True)
class Chunk:
    """What one OpenAI streaming chunk says: new text, cumulative usage, end, or an error."""

    text: str = ""
    completion_tokens: int | None = None  # cumulative, when the chunk carries `usage`
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    error: str | None = None


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        msg = err.get("message") or err.get("detail") or json.dumps(err)
        return f"{err.get('type') or 'error'}: {msg}"
    return str(err)


def parse_chunk(event: SSEEvent) -> Chunk:
    """Decode one `data:` payload of `/v1/completions` or `/v1/chat/completions`."""
    try:
        obj = json.loads(event.data)
    except json.JSONDecodeError:
        if event.event == "error":
            return Chunk(error=f"server error event: {event.data.strip()[:200]}")
        return Chunk(error=f"malformed stream chunk (not JSON): {event.data.strip()[:200]!r}")
    if not isinstance(obj, dict):
        return Chunk(error=f"malformed stream chunk (not an object): {event.data.strip()[:200]!r}")
    if event.event == "error" or "error" in obj:
        return Chunk(error=f"server error event: {_error_text(obj.get('error', obj))}")
    text_parts: list[str] = []
    finish: str | None = None
    for choice in obj.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        if isinstance(choice.get("text"), str):
            text_parts.append(choice["text"])
        delta = choice.get("delta")
        if isinstance(delta, dict):
            for key in ("content", "reasoning_content"):
                if isinstance(delta.get(key), str):
                    text_parts.append(delta[key])
        finish = choice.get("finish_reason") or finish
    usage = obj.get("usage")
    completion = prompt = None
    if isinstance(usage, dict):
        completion = usage.get("completion_tokens")
        prompt = usage.get("prompt_tokens")
    return Chunk(
        text="".join(text_parts),
        completion_tokens=int(completion) if isinstance(completion, int | float) else None,
        prompt_tokens=int(prompt) if isinstance(prompt, int | float) else None,
        finish_reason=finish,
    )
