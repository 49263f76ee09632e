"""Tokenizers: a byte-level one for the built-in model, and Hugging Face `tokenizer.json`.

Both expose `encode`, `decode`, `eos_token_id` and `chat_prompt`. `Detokenizer` turns a growing
list of ids into text deltas without ever emitting half a UTF-8 character (a byte-level or
byte-fallback BPE token can end mid-character), and holds back text that might still become
a stop string, so a client never sees the stop string's beginning.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

REPLACEMENT = "\ufffd"


class Tokenizer(Protocol):
    @property
    def eos_token_id(self) -> int | None: ...

    @property
    def bos_token_id(self) -> int | None: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> str: ...


def plain_chat_prompt(messages: Sequence[dict[str, str]]) -> str:
    """A template for models without one: each turn as `<|role|>` + text, then the reply."""
    turns = [f"<|{m.get('role', 'user')}|>\n{m.get('content', '')}\n" for m in messages]
    return "".join(turns) + "<|assistant|>\n"


class ByteTokenizer:
    """UTF-8 bytes are tokens 0-255; then <bos>, <eos>, <pad>."""

    bos_token_id = 256
    eos_token_id = 257
    pad_token_id = 258
    vocab_size = 259

    def encode(self, text: str) -> list[int]:
        return [self.bos_token_id, *text.encode("utf-8")]

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        return plain_chat_prompt(messages)


class HFTokenizer:
    """A checkpoint's `tokenizer.json` through the `tokenizers` library, with its chat
    template from `tokenizer_config.json` when it has one (rendered with jinja2)."""

    def __init__(self, directory: str | Path, eos_token_id: int | None = None) -> None:
        import json

        from tokenizers import Tokenizer as RustTokenizer

        path = Path(directory)
        if not (path / "tokenizer.json").is_file():
            raise ValueError(f"{path}: no tokenizer.json (only that format is supported)")
        self._tok = RustTokenizer.from_file(str(path / "tokenizer.json"))
        cfg_path = path / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text()) if cfg_path.is_file() else {}
        self._template: str | None = cfg.get("chat_template")
        self._bos_text = _token_text(cfg.get("bos_token"))
        self._eos_text = _token_text(cfg.get("eos_token"))
        self._eos = eos_token_id
        if self._eos is None and self._eos_text:
            self._eos = self._tok.token_to_id(self._eos_text)
        self._bos = self._tok.token_to_id(self._bos_text) if self._bos_text else None

    @property
    def eos_token_id(self) -> int | None:
        return self._eos

    @property
    def bos_token_id(self) -> int | None:
        return self._bos

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self._tok.encode(text).ids
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        text: str = self._tok.decode(list(ids), skip_special_tokens=True)
        return text

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        if not self._template:
            return plain_chat_prompt(messages)
        import jinja2

        env = jinja2.Environment(autoescape=False)
        text: str = env.from_string(self._template).render(
            messages=list(messages),
            add_generation_prompt=True,
            bos_token=self._bos_text or "",
            eos_token=self._eos_text or "",
        )
        return text


def _token_text(value: object) -> str | None:
    if isinstance(value, dict):
        content = value.get("content")
        return str(content) if content is not None else None
    return str(value) if value is not None else None


class Detokenizer:
    """Text deltas for one request's output ids (vLLM's prefix/read-offset method)."""

    def __init__(self, tokenizer: Tokenizer, stop: Sequence[str] = ()) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.text = ""  # all decoded output text
        self.emitted = 0  # characters of `text` already handed out
        self.stop = tuple(s for s in stop if s)
        self._hold = max((len(s) for s in self.stop), default=1) - 1
        self._prefix = 0
        self._read = 0

    def add(self, token_id: int) -> tuple[str, bool]:
        """Feed one token; returns (text safe to emit now, whether a stop string matched)."""
        self.ids.append(token_id)
        new = self.tokenizer.decode(self.ids[self._prefix :])
        if new.endswith(REPLACEMENT):
            return "", False  # an incomplete character: wait for the next token
        old = self.tokenizer.decode(self.ids[self._prefix : self._read])
        start = len(self.text)
        self.text += new[len(old) :]
        self._prefix, self._read = self._read, len(self.ids)
        # the earliest match of any stop string, not the first string listed that matches:
        # with stops "~" and "0~", the text "0~" stops before the "0"
        found = [self.text.find(s, max(0, start - len(s) + 1)) for s in self.stop]
        cuts = [i for i in found if i >= 0]
        if cuts:
            self.text = self.text[: min(cuts)]
            return self.flush(), True
        safe = max(self.emitted, len(self.text) - self._hold)
        delta = self.text[self.emitted : safe]
        self.emitted = safe
        return delta, False

    def flush(self) -> str:
        """Everything not yet emitted (at the end of the stream), including bytes held back
        as an unfinished character: a real U+FFFD, or a cut one, which is then shown as one."""
        if self._read < len(self.ids):
            new = self.tokenizer.decode(self.ids[self._prefix :])
            old = self.tokenizer.decode(self.ids[self._prefix : self._read])
            self.text += new[len(old) :]
            self._prefix = self._read = len(self.ids)
        delta = self.text[self.emitted :]
        self.emitted = len(self.text)
        return delta
