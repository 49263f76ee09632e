"""Server-sent events in OpenAI's exact chunk format, and a response that always closes the
engine stream.

Spec section 6: tokens are pushed the moment the engine produces them, one SSE event each, so
the client's pacer sees true arrival times. The wire format follows OpenAI so any OpenAI client
(and `vllm bench serve`) can read it: a role chunk first (chat), a chunk per text delta, a chunk
with the `finish_reason`, an optional usage chunk with `choices: []`, then `data: [DONE]`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from kairos.andes.engine.api import TokenEvent
from kairos.andes.server.errors import error_body

log = logging.getLogger(__name__)

DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class EngineEnded(RuntimeError):
    """The engine ended a stream itself instead of finishing it: finish_reason "abort",
    "shutdown" (the server is stopping) or "error" (an iteration failed). Not a normal OpenAI
    finish, so the client gets an error (`code` is "aborted", "shutting_down" or
    "engine_error"; `status` for non-streaming)."""

    def __init__(self, reason: str) -> None:
        if reason == "abort":
            msg, self.code, self.status = "the engine aborted the request", "aborted", 503
        elif reason == "shutdown":
            msg, self.code, self.status = "the server is shutting down", "shutting_down", 503
        else:
            msg, self.code, self.status = "the engine failed while generating", "engine_error", 500
        super().__init__(msg)

    @staticmethod
    def check(reason: str | None) -> None:
        if reason in ENGINE_ENDED:
            raise EngineEnded(reason)


ENGINE_ENDED = frozenset({"abort", "error", "shutdown"})


def sse(obj: Mapping[str, Any]) -> bytes:
    """One SSE event carrying a JSON object."""
    return b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


@dataclass(frozen=True)
class ChunkFormat:
    """Builds the chunks of one response; chat and text completions differ only in shape."""

    kind: Literal["chat", "completion"]
    id: str
    created: int
    model: str
    include_usage: bool = False
    continuous_usage: bool = False  # usage (so far) in every text chunk too

    def _wrap(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        obj = "chat.completion.chunk" if self.kind == "chat" else "text_completion"
        out: dict[str, Any] = {
            "id": self.id,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": choices,
        }
        if self.include_usage:
            out["usage"] = None  # OpenAI sends an explicit null until the usage chunk
        return out

    def _choice(self, text: str | None, finish: str | None, role: bool = False) -> dict[str, Any]:
        if self.kind == "completion":
            body: dict[str, Any] = {"text": text or ""}
        elif role:
            body = {"delta": {"role": "assistant", "content": ""}}
        else:
            body = {"delta": {} if text is None else {"content": text}}
        return {"index": 0, **body, "logprobs": None, "finish_reason": finish}

    def role(self) -> dict[str, Any]:
        return self._wrap([self._choice(None, None, role=True)])

    def text(self, text: str, event: TokenEvent | None = None) -> dict[str, Any]:
        out = self._wrap([self._choice(text, None)])
        if self.continuous_usage and event is not None:
            out["usage"] = _usage(event.prompt_tokens, event.completion_tokens)
        return out

    def finish(self, reason: str) -> dict[str, Any]:
        return self._wrap([self._choice(None, reason)])

    def usage(self, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        out = self._wrap([])
        out["usage"] = _usage(prompt_tokens, completion_tokens)
        return out


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


async def sse_events(
    fmt: ChunkFormat, first: TokenEvent, events: AsyncIterator[TokenEvent]
) -> AsyncIterator[bytes]:
    """The SSE body of one streaming response, starting from the already-received first event.

    An engine failure after the first event cannot change the HTTP status any more, so it
    ends the stream with an OpenAI error event (which OpenAI clients raise) and `[DONE]`.
    """
    try:
        if fmt.kind == "chat":
            yield sse(fmt.role())
        event: TokenEvent | None = first
        while event is not None and event.finish_reason is None:
            if event.text:
                yield sse(fmt.text(event.text, event))
            event = await anext(events, None)
        if event is None:
            raise RuntimeError("the engine stream ended without a finish_reason")
        if event.text:
            yield sse(fmt.text(event.text, event))
        EngineEnded.check(event.finish_reason)
        yield sse(fmt.finish(event.finish_reason or "stop"))
        if fmt.include_usage:
            yield sse(fmt.usage(event.prompt_tokens, event.completion_tokens))
    except Exception as exc:
        if isinstance(exc, EngineEnded):
            log.warning("request %s: %s", fmt.id, exc)
            message, code = f"{exc} (request {fmt.id})", exc.code
        else:
            log.exception("request %s: engine failed mid-stream", fmt.id)
            message, code = f"internal engine error in request {fmt.id} (see server log)", None
        yield sse(error_body(message, "server_error", None, code))
    yield DONE


class EngineStreamResponse(StreamingResponse):
    """An SSE response that closes the engine stream however the response ends.

    Starlette cancels the body when the client disconnects but never closes the iterator, and
    the first event was pulled before the body started, so the engine stream is closed here,
    shielded from the cancellation: closing it is what aborts the request and frees its KV.
    """

    def __init__(
        self,
        content: AsyncIterator[bytes],
        close: Callable[[], Awaitable[None]],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            content, media_type="text/event-stream", headers={**SSE_HEADERS, **(headers or {})}
        )
        self._content = content
        self._close = close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                aclose = getattr(self._content, "aclose", None)
                if aclose is not None:
                    await aclose()
                await self._close()
