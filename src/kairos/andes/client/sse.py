"""OpenAI stream chunks out of server-sent events, for the bench client and the pacer.

httpx-sse decodes the wire (lines split anywhere, `\\r\\n`/`\\r`/`\\n`, comments, `event:`
fields, multi-line data, an event dispatched at its blank line, as the SSE spec says); this
module only turns one event into the OpenAI chunk it carries. Both clients read streams through
`openai_chunk`, so they agree on what a chunk, the end (`data: [DONE]`) and an error are.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from httpx_sse import EventSource, ServerSentEvent, SSEError

if TYPE_CHECKING:
    import httpx

DONE = "[DONE]"
__all__ = ["DONE", "Chunk", "StreamError", "openai_chunk", "openai_chunks", "read_chunk"]


class StreamError(RuntimeError):
    """The stream cannot be read as OpenAI chunks: a malformed chunk, an error event, or an
    answer that is not an event stream. The message says which, with the offending data."""


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        msg = err.get("message") or err.get("detail") or json.dumps(err)
        return f"{err.get('type') or 'error'}: {msg}"
    return str(err)


def openai_chunk(event: ServerSentEvent) -> dict[str, Any] | None:
    """The chunk object one event carries; None for the closing `data: [DONE]`.

    Raises `StreamError` for an error event (`event: error`, or a chunk holding `error`, as
    OpenAI-compatible servers report a failure mid-stream) and for data that is not a JSON
    object, so a caller never mistakes a broken stream for an empty chunk.
    """
    data = event.data.strip()
    if data == DONE:
        return None
    try:
        obj = json.loads(data)
    except json.JSONDecodeError:
        if event.event == "error":
            raise StreamError(f"server error event: {data[:200]}") from None
        raise StreamError(f"malformed stream chunk (not JSON): {data[:200]!r}") from None
    if not isinstance(obj, dict):
        raise StreamError(f"malformed stream chunk (not an object): {data[:200]!r}")
    if event.event == "error" or "error" in obj:
        raise StreamError(f"server error event: {_error_text(obj.get('error', obj))}")
    return obj


async def openai_events(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    """The events of a streaming response; `StreamError` if it is not an event stream."""
    try:
        async for event in EventSource(response).aiter_sse():
            yield event
    except SSEError as exc:
        raise StreamError(f"not an event stream: {exc}") from None


async def openai_chunks(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Every chunk of a streaming response, up to `data: [DONE]` (or the end of the body)."""
    async for event in openai_events(response):
        chunk = openai_chunk(event)
        if chunk is None:
            return
        yield chunk


@dataclass(frozen=True)
class Chunk:
    """What the bench reads from one chunk: new text, cumulative usage, the end reason."""

    text: str = ""
    completion_tokens: int | None = None  # cumulative, when the chunk carries `usage`
    prompt_tokens: int | None = None
    finish_reason: str | None = None


def _count(x: Any) -> int | None:
    return int(x) if isinstance(x, int | float) else None


def read_chunk(obj: dict[str, Any]) -> Chunk:
    """One `/v1/completions` or `/v1/chat/completions` chunk: text of every choice (completion
    `text`, chat `delta.content` and `delta.reasoning_content`), usage and finish reason."""
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
    usage = usage if isinstance(usage, dict) else {}
    return Chunk(
        text="".join(text_parts),
        completion_tokens=_count(usage.get("completion_tokens")),
        prompt_tokens=_count(usage.get("prompt_tokens")),
        finish_reason=finish,
    )
