"""The OpenAI wire format: request bodies we accept and the non-streaming bodies we answer.

Requests are validated strictly (no "1" for 1, no "yes" for true, no NaN) so a client bug is
reported with the field's name instead of being guessed at; unknown top-level fields are
ignored because OpenAI clients send extras. QoE travels in extra body fields:
`qoe: {ttft_s, tokens_per_s}` or `qoe: "reader" | "listener"`, or the Andes reference code's
`qoe_required: {ttft, latency, output_len}`. Streaming chunks live in `streaming.py`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from kairos.andes.qoe import PROFILES

MAX_STOP_STRINGS = 16
# A stop string is held back until it can no longer start one, so a 200,000-character stop
# string held every byte of output to the end; real stop strings are a few tokens long.
MAX_STOP_CHARS = 256
MAX_SEED = 2**63 - 1  # torch's generator takes a signed 64-bit seed


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore")


class QoEObject(_Strict):
    """`qoe: {...}`: either part may be left out and is then filled from server defaults."""

    model_config = ConfigDict(extra="forbid")

    ttft_s: float | None = Field(default=None, ge=0)
    tokens_per_s: float | None = Field(default=None, gt=0)


class QoERequired(_Strict):
    """The Andes reference code's `qoe_required`: `latency` is seconds per token."""

    ttft: float | None = Field(default=None, ge=0)
    latency: float | None = Field(default=None, gt=0)
    output_len: Any = None  # accepted and ignored: the engine stops on max_tokens / EOS


class StreamOptions(_Strict):
    include_usage: bool | None = False
    # vLLM's extension: usage in every chunk, so a client can count tokens a chunk carries
    continuous_usage_stats: bool | None = False


class ChatMessage(_Strict):
    """One chat turn; content parts are accepted as long as they are text."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str = ""
    name: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _text_only(cls, v: Any) -> Any:
        if v is None:
            return ""
        if isinstance(v, list):
            texts = []
            for part in v:
                if not (isinstance(part, dict) and part.get("type") == "text"):
                    raise ValueError("only text content parts ({'type': 'text'}) are supported")
                text = part.get("text")
                if not isinstance(text, str):
                    raise ValueError("a text content part needs a string 'text'")
                texts.append(text)
            return "".join(texts)
        return v


class _GenerationRequest(_Strict):
    """Fields common to chat and text completions."""

    model: str
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED)
    stop: list[str] | None = None
    n: int | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    ignore_eos: bool | None = False
    qoe: QoEObject | str | None = None
    qoe_required: QoERequired | None = None

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            if not all(isinstance(s, str) for s in v):
                raise ValueError("stop must be a string or a list of strings")
            v = [s for s in v if s]
            if len(v) > MAX_STOP_STRINGS:
                raise ValueError(f"at most {MAX_STOP_STRINGS} stop strings are supported")
            longest = max((len(s) for s in v), default=0)
            if longest > MAX_STOP_CHARS:
                raise ValueError(
                    f"a stop string may be at most {MAX_STOP_CHARS} characters (got {longest})"
                )
        elif v is not None:
            raise ValueError("stop must be a string or a list of strings")
        return v

    @field_validator("n")
    @classmethod
    def _one_choice(cls, v: int | None) -> int | None:
        if v is not None and v != 1:
            raise ValueError("only n=1 is supported")
        return v

    @field_validator("qoe", mode="before")
    @classmethod
    def _qoe_shape(cls, v: Any) -> Any:
        if v is None or isinstance(v, dict):
            return v
        if isinstance(v, str):
            if v not in PROFILES:
                raise ValueError(f"unknown QoE profile {v!r}; use one of {sorted(PROFILES)}")
            return v
        raise ValueError(
            "qoe must be an object {ttft_s, tokens_per_s} or a profile name "
            f"(one of {sorted(PROFILES)})"
        )

    @field_validator("qoe_required")
    @classmethod
    def _one_qoe_form(cls, v: QoERequired | None, info: ValidationInfo) -> QoERequired | None:
        if v is not None and info.data.get("qoe") is not None:
            raise ValueError("give either qoe or qoe_required, not both")
        return v

    @property
    def requested_max_tokens(self) -> int | None:
        """`max_completion_tokens` (OpenAI's current name) wins over the older `max_tokens`."""
        return self.max_completion_tokens or self.max_tokens

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    @property
    def continuous_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.continuous_usage_stats)


class ChatCompletionRequest(_GenerationRequest):
    messages: list[ChatMessage] = Field(min_length=1)

    def engine_messages(self) -> list[dict[str, str]]:
        """Messages as the engine's chat template takes them (`developer` is OpenAI's new
        name for `system`)."""
        return [
            {"role": "system" if m.role == "developer" else m.role, "content": m.content}
            for m in self.messages
        ]


class CompletionRequest(_GenerationRequest):
    prompt: str | list[int]

    @field_validator("prompt", mode="before")
    @classmethod
    def _one_prompt(cls, v: Any) -> Any:
        if isinstance(v, list):
            if any(isinstance(p, str | list) for p in v):
                raise ValueError(
                    "batched prompts (a list of strings or of token lists) are not supported; "
                    "send one prompt per request"
                )
            if not v:
                raise ValueError("prompt must not be empty")
            if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in v):
                raise ValueError("a token-id prompt must be a list of non-negative integers")
        elif not isinstance(v, str):
            raise ValueError("prompt must be a string or a list of token ids")
        return v


REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    QoEObject,
    QoERequired,
    StreamOptions,
    ChatMessage,
    ChatCompletionRequest,
    CompletionRequest,
)
FIELD_NAMES = frozenset(name for m in REQUEST_MODELS for name in m.model_fields)


# ---- responses (non-streaming) ----------------------------------------------------------


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int

    @classmethod
    def of(cls, prompt_tokens: int, completion_tokens: int) -> Usage:
        return cls(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: None = None


class ChatChoice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: str
    logprobs: None = None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    system_fingerprint: None = None


class CompletionChoice(BaseModel):
    index: int = 0
    text: str
    finish_reason: str
    logprobs: None = None


class Completion(BaseModel):
    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage
    system_fingerprint: None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "kairos"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
