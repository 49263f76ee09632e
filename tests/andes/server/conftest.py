"""Fixtures: the app over a fake engine, served by uvicorn on a free local port."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest

from kairos.andes.server import BackgroundServer, ServerSettings, create_app
from tests.andes.server.fake_engine import FakeEngine

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"


@dataclass
class Live:
    """A running server, its fake engine, and an HTTP client bound to it."""

    server: BackgroundServer
    engine: FakeEngine
    http: httpx.Client

    @property
    def url(self) -> str:
        return self.server.url

    def openai(self, api_key: str = "unused", **kw: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, **kw)


Serve = Callable[..., Live]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """`serve(settings=..., **fake_engine_fields)` starts a server; all are stopped after."""
    running: list[Live] = []

    def start(settings: ServerSettings | None = None, **fake: Any) -> Live:
        engine = FakeEngine(**fake)
        srv = BackgroundServer(create_app(engine, settings or ServerSettings())).start()
        live = Live(srv, engine, httpx.Client(base_url=srv.url, timeout=5))
        running.append(live)
        return live

    yield start
    for live in running:
        live.http.close()
        live.server.stop()


@pytest.fixture(scope="module")
def _shared() -> Iterator[Live]:
    engine = FakeEngine()
    srv = BackgroundServer(create_app(engine, ServerSettings())).start()
    live = Live(srv, engine, httpx.Client(base_url=srv.url, timeout=5))
    yield live
    live.http.close()
    srv.stop()


@pytest.fixture
def live(_shared: Live) -> Live:
    """A server with default settings, shared by a module; its fake engine starts each test
    fresh (uvicorn takes ~0.2 s to stop, so one server per test would dominate the run)."""
    fresh = FakeEngine(started=_shared.engine.started)
    _shared.engine.__dict__.update(fresh.__dict__)
    return _shared


def chat_body(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4,
    }
    body.update(extra)
    return body


def assert_serves(live: Live, headers: dict[str, str] | None = None) -> None:
    """The server still answers a good request after whatever the test did."""
    r = live.http.post(CHAT, json=chat_body(), headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "w0 w1 w2 w3 "


def read_sse(response: httpx.Response) -> list[str]:
    """The `data:` payloads of an SSE response, checking the framing on the way."""
    payloads = []
    for line in response.iter_lines():
        if not line:
            continue
        assert line.startswith("data: "), f"not an SSE data line: {line!r}"
        payloads.append(line[len("data: ") :])
    return payloads
