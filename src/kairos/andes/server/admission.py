"""From a validated OpenAI request to what the engine takes: prompt ids, sampling, QoE.

Every check that can refuse a request happens here, before the engine sees it, so a refused
request never holds KV blocks or a queue slot: wrong model, empty or over-long prompt, too
many tokens asked for, QoE values that make no sense.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kairos.andes.engine.api import EngineClient, QoESpec, SamplingParams
from kairos.andes.qoe import ttft_target
from kairos.andes.server.errors import APIError
from kairos.andes.server.protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    QoEObject,
)
from kairos.andes.server.settings import ServerSettings, profile_mean_speed

GenerationRequest = ChatCompletionRequest | CompletionRequest


@dataclass(frozen=True)
class EngineInputs:
    """Arguments for `EngineClient.generate`, minus the request id."""

    prompt_ids: list[int]
    params: SamplingParams
    qoe: QoESpec


def check_model(req: GenerationRequest, engine: EngineClient) -> None:
    if req.model != engine.model_name:
        raise APIError(
            404,
            f"The model '{req.model}' does not exist; this server serves '{engine.model_name}'.",
            param="model",
            code="model_not_found",
        )


def prompt_ids(req: GenerationRequest, engine: EngineClient) -> list[int]:
    """Tokenise: the chat template for messages, the text (or the ids as given) otherwise."""
    param = "messages" if isinstance(req, ChatCompletionRequest) else "prompt"
    try:
        if isinstance(req, ChatCompletionRequest):
            ids = engine.encode(engine.chat_prompt(req.engine_messages()))
        elif isinstance(req.prompt, str):
            ids = engine.encode(req.prompt)
        else:
            ids = list(req.prompt)
    except ValueError as exc:
        raise APIError(400, f"Invalid value for '{param}': {exc}", param=param) from exc
    if not ids:
        raise APIError(400, f"'{param}' encodes to no tokens", param=param, code="invalid_value")
    return ids


def max_new_tokens(
    req: GenerationRequest, n_prompt: int, engine: EngineClient, settings: ServerSettings
) -> int:
    """The output budget: as asked, or whatever the context window leaves."""
    limit = engine.max_model_len
    prompt_limit = min(limit - 1, settings.max_prompt_tokens or limit)
    param = "messages" if isinstance(req, ChatCompletionRequest) else "prompt"
    if n_prompt > prompt_limit:
        raise APIError(
            400,
            f"This model's maximum context length is {limit} tokens and this server accepts "
            f"prompts of at most {prompt_limit} tokens; your prompt has {n_prompt} tokens. "
            "Please shorten it.",
            param=param,
            code="context_length_exceeded",
        )
    asked = req.requested_max_tokens
    if asked is None:
        return limit - n_prompt
    if n_prompt + asked > limit:
        name = "max_completion_tokens" if req.max_completion_tokens else "max_tokens"
        raise APIError(
            400,
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{n_prompt + asked} tokens ({n_prompt} in the prompt, {asked} for the "
            f"completion). Please reduce the prompt or '{name}' (at most {limit - n_prompt}).",
            param=name,
            code="context_length_exceeded",
        )
    return asked


def resolve_qoe(req: GenerationRequest, n_prompt: int, settings: ServerSettings) -> QoESpec:
    """The request's QoE with missing parts from server defaults (spec section 2)."""
    ttft: float | None = None
    speed: float | None = None
    param = "qoe"
    if isinstance(req.qoe, QoEObject):
        ttft, speed = req.qoe.ttft_s, req.qoe.tokens_per_s
    elif isinstance(req.qoe, str):
        speed = profile_mean_speed(req.qoe)
    elif req.qoe_required is not None:
        param = "qoe_required"
        ttft = req.qoe_required.ttft
        if req.qoe_required.latency is not None:
            speed = 1.0 / req.qoe_required.latency
            if not math.isfinite(speed):
                raise APIError(
                    400,
                    "Invalid value for 'qoe_required.latency': too small "
                    f"({req.qoe_required.latency} s per token)",
                    param="qoe_required.latency",
                )
    if ttft is None:
        ttft = settings.default_ttft_s
    if ttft is None:
        ttft = float(ttft_target(n_prompt, settings.prefill_tokens_per_s))
    if speed is None:
        speed = settings.profile_speed()
    try:
        return QoESpec(ttft_s=ttft, tokens_per_s=speed)
    except ValueError as exc:
        raise APIError(400, f"Invalid value for '{param}': {exc}", param=param) from exc


def sampling_params(req: GenerationRequest, max_tokens: int) -> SamplingParams:
    try:
        return SamplingParams(
            max_tokens=max_tokens,
            temperature=1.0 if req.temperature is None else req.temperature,
            top_p=1.0 if req.top_p is None else req.top_p,
            seed=req.seed,
            stop=tuple(req.stop or ()),
            ignore_eos=bool(req.ignore_eos),
        )
    except ValueError as exc:
        raise APIError(400, f"Invalid sampling parameters: {exc}") from exc


def engine_inputs(
    req: GenerationRequest, engine: EngineClient, settings: ServerSettings
) -> EngineInputs:
    """Validate a request against the engine and settings; raise `APIError` to refuse it."""
    check_model(req, engine)
    ids = prompt_ids(req, engine)
    budget = max_new_tokens(req, len(ids), engine, settings)
    return EngineInputs(
        prompt_ids=ids,
        params=sampling_params(req, budget),
        qoe=resolve_qoe(req, len(ids), settings),
    )
