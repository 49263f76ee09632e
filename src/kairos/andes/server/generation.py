"""One completion request end to end: admit, validate, hand to the engine, answer.

The order matters. The overload check comes first, before the body is even read, so a flood is
refused cheaply. The first engine event is awaited before answering, so a request the engine
refuses (`ValueError`) still gets a proper 400 rather than a broken stream. From the moment the
engine stream exists, every exit path closes it, which is the engine's abort signal.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Literal

from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.requests import Request

from kairos.andes.engine.api import EngineClient, TokenEvent
from kairos.andes.server.admission import GenerationRequest, engine_inputs
from kairos.andes.server.errors import APIError, validation_error
from kairos.andes.server.prometheus import ServerCounters
from kairos.andes.server.protocol import (
    FIELD_NAMES,
    AssistantMessage,
    ChatChoice,
    ChatCompletion,
    ChatCompletionRequest,
    Completion,
    CompletionChoice,
    CompletionRequest,
    Usage,
)
from kairos.andes.server.settings import ServerSettings
from kairos.andes.server.streaming import (
    ChunkFormat,
    EngineEnded,
    EngineStreamResponse,
    sse_events,
)
from kairos.runtime.disconnect import ClientGone, close_quietly, until_disconnected
from kairos.runtime.json_body import read_json
from kairos.runtime.middleware import CLIENT_CLOSED

log = logging.getLogger(__name__)

Kind = Literal["chat", "completion"]


class GenerationHandler:
    """Serves /v1/chat/completions and /v1/completions over one engine."""

    def __init__(
        self, engine: EngineClient, settings: ServerSettings, counters: ServerCounters
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.counters = counters

    def check_overload(self) -> None:
        """429 once the engine queue plus requests on their way in reach `max_waiting`."""
        queued = self.engine.stats().waiting + self.counters.pending
        if queued >= self.settings.max_waiting:
            raise self.settings.overloaded(
                f"The server is overloaded ({queued} requests waiting, "
                f"limit {self.settings.max_waiting})"
            )

    async def handle(self, request: Request, kind: Kind) -> Response:
        pending = False
        events: AsyncIterator[TokenEvent] | None = None
        handed_to_response = False
        try:
            # Only a fully received body counts against the queue: connections that stall
            # mid-body wait out `body_timeout_s` (408) without turning real requests away.
            payload = await read_json(request, self.settings)
            self.check_overload()
            self.counters.pending += 1
            pending = True
            model = ChatCompletionRequest if kind == "chat" else CompletionRequest
            try:
                req: GenerationRequest = model.model_validate(payload)
            except ValidationError as exc:
                raise validation_error(exc, FIELD_NAMES) from None
            inputs = engine_inputs(req, self.engine, self.settings)
            rid = f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex}"
            try:
                events = self.engine.generate(rid, inputs.prompt_ids, inputs.params, inputs.qoe)
            except ValueError as exc:
                raise APIError(400, str(exc)) from None
            # No await between here and the engine's first step: the request moves from
            # "pending" to the engine's own queue without being counted twice or not at all.
            self.counters.pending -= 1
            pending = False
            self.counters.in_flight += 1
            first = await self._first_event(request, events)
            fmt = ChunkFormat(
                kind,
                rid,
                int(time.time()),
                self.engine.model_name,
                req.include_usage,
                req.continuous_usage,
            )
            headers = {
                "X-Request-Id": rid,
                "X-Kairos-QoE-TTFT-S": f"{inputs.qoe.ttft_s:g}",
                "X-Kairos-QoE-Tokens-Per-S": f"{inputs.qoe.tokens_per_s:g}",
            }
            if req.stream:
                stream = events

                async def release() -> None:
                    await self._release(stream)

                handed_to_response = True
                return EngineStreamResponse(sse_events(fmt, first, events), release, headers)
            return await self._complete(request, fmt, first, events, headers)
        except ClientGone:
            log.info("client went away before the answer was ready")
            return Response(status_code=CLIENT_CLOSED)
        finally:
            if pending:
                self.counters.pending -= 1
            if events is not None and not handed_to_response:
                await self._release(events)

    async def _release(self, events: AsyncIterator[TokenEvent]) -> None:
        await close_quietly(events)
        self.counters.in_flight -= 1

    async def _first_event(self, request: Request, events: AsyncIterator[TokenEvent]) -> TokenEvent:
        try:
            first = await until_disconnected(request, lambda: anext(events, None))
        except ValueError as exc:
            raise APIError(400, str(exc)) from None
        except (ClientGone, APIError):
            raise
        except Exception:
            log.exception("the engine failed before the first token")
            raise APIError(500, "internal engine error (see the server log)") from None
        if first is None:
            raise APIError(500, "the engine ended the request without any output")
        return first

    async def _complete(
        self,
        request: Request,
        fmt: ChunkFormat,
        first: TokenEvent,
        events: AsyncIterator[TokenEvent],
        headers: dict[str, str],
    ) -> Response:
        """The non-streaming answer: collect every event, still aborting if the client leaves."""

        async def collect() -> tuple[str, TokenEvent]:
            parts: list[str] = []
            event: TokenEvent | None = first
            while event is not None:
                parts.append(event.text)
                if event.finish_reason is not None:
                    return "".join(parts), event
                event = await anext(events, None)
            raise RuntimeError("the engine stream ended without a finish_reason")

        try:
            text, last = await until_disconnected(request, collect)
            EngineEnded.check(last.finish_reason)
        except ClientGone:
            raise
        except EngineEnded as exc:
            log.warning("request %s: %s", fmt.id, exc)
            raise APIError(exc.status, f"{exc} (request {fmt.id})", code=exc.code) from None
        except Exception:
            log.exception("request %s: engine failed", fmt.id)
            raise APIError(500, f"internal engine error in request {fmt.id}") from None
        usage = Usage.of(last.prompt_tokens, last.completion_tokens)
        reason = last.finish_reason or "stop"
        body: ChatCompletion | Completion
        if fmt.kind == "chat":
            choice = ChatChoice(message=AssistantMessage(content=text), finish_reason=reason)
            body = ChatCompletion(
                id=fmt.id, created=fmt.created, model=fmt.model, choices=[choice], usage=usage
            )
        else:
            body = Completion(
                id=fmt.id,
                created=fmt.created,
                model=fmt.model,
                choices=[CompletionChoice(text=text, finish_reason=reason)],
                usage=usage,
            )
        return JSONResponse(body.model_dump(), headers=headers)
