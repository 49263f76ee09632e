"""Bad requests get OpenAI-shaped errors naming the problem, and never break the server."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import openai
import pytest

from kairos.andes.server import ServerSettings
from tests.andes.server.conftest import CHAT, COMPLETIONS, Live, Serve, assert_serves, chat_body
from tests.scrape import scrape


def _error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert isinstance(err["message"], str) and err["message"]
    return err


def test_api_key_required_on_v1_but_not_health(serve: Serve) -> None:
    live = serve(ServerSettings(api_key="sekrit"))
    http = live.http
    err = _error(http.post(CHAT, json=chat_body()), 401)
    assert err["code"] == "invalid_api_key"
    assert http.get("/v1/models", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert http.get("/v1/models", headers={"Authorization": "sekrit"}).status_code == 401
    assert http.get("/health").status_code == 200
    good = {"Authorization": "Bearer sekrit"}
    assert http.get("/v1/models", headers=good).status_code == 200
    assert_serves(live, headers=good)
    with pytest.raises(openai.AuthenticationError):
        live.openai(api_key="wrong").models.list()
    models = live.openai(api_key="sekrit").models.list()
    assert [m.id for m in models] == ["fake-model"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'{"model": "fake-model", "messages": [', "parse the JSON"),
        (b"", "empty"),
        (b"[1, 2]", "JSON object"),
        (b'{"model": "fake-model", "temperature": NaN}', "NaN"),
        (b"\xff\xfe{}", "parse the JSON"),
    ],
)
def test_malformed_json_is_400(live: Live, content: bytes, needle: str) -> None:
    r = live.http.post(CHAT, content=content, headers={"Content-Type": "application/json"})
    err = _error(r, 400)
    assert err["type"] == "invalid_request_error"
    assert needle in err["message"]
    assert not live.engine.requests
    assert_serves(live)


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"temperature": "hot"}, "temperature"),
        ({"temperature": 3.5}, "temperature"),
        ({"max_tokens": "5"}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_completion_tokens": -1}, "max_completion_tokens"),
        ({"top_p": 0}, "top_p"),
        ({"stream": "yes"}, "stream"),
        ({"seed": 1.5}, "seed"),
        ({"stop": 7}, "stop"),
        ({"stop": ["a", 3]}, "stop"),
        ({"n": 2}, "n"),
        ({"stream_options": {"include_usage": "true"}}, "stream_options.include_usage"),
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content",
        ),
    ],
)
def test_wrong_type_or_value_is_400_naming_the_field(
    live: Live, extra: dict[str, Any], param: str
) -> None:
    err = _error(live.http.post(CHAT, json=chat_body(**extra)), 400)
    assert err["param"] == param
    assert f"'{param}'" in err["message"]
    assert not live.engine.requests
    assert_serves(live)


def test_missing_model_is_400(live: Live) -> None:
    body = chat_body()
    del body["model"]
    err = _error(live.http.post(CHAT, json=body), 400)
    assert err["param"] == "model" and err["code"] == "missing_required_parameter"


def test_unknown_model_is_404(live: Live) -> None:
    err = _error(live.http.post(CHAT, json=chat_body(model="gpt-9")), 404)
    assert err["code"] == "model_not_found" and err["param"] == "model"
    assert "gpt-9" in err["message"]
    client = live.openai()
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="gpt-9", prompt="x")
    assert not live.engine.requests
    assert_serves(live)


def test_completion_prompt_forms(live: Live) -> None:
    err = _error(
        live.http.post(COMPLETIONS, json={"model": "fake-model", "prompt": ["a", "b"]}), 400
    )
    assert err["param"] == "prompt" and "batched" in err["message"]
    err = _error(live.http.post(COMPLETIONS, json={"model": "fake-model", "prompt": [1, -2]}), 400)
    assert err["param"] == "prompt"
    err = _error(live.http.post(COMPLETIONS, json={"model": "fake-model", "prompt": ""}), 400)
    assert err["param"] == "prompt"
    r = live.http.post(
        COMPLETIONS, json={"model": "fake-model", "prompt": [5, 6, 7], "max_tokens": 1}
    )
    assert r.status_code == 200 and r.json()["choices"][0]["text"] == "w0 "
    (recorded,) = live.engine.requests.values()
    assert recorded.prompt_ids == [5, 6, 7]


@pytest.mark.parametrize("chunked", [False, True])
def test_oversize_body_is_413(serve: Serve, chunked: bool) -> None:
    live = serve(ServerSettings(max_body_bytes=2000))
    body = chat_body(messages=[{"role": "user", "content": "x" * 5000}])
    raw = json.dumps(body).encode()
    content: Any = iter([raw[i : i + 512] for i in range(0, len(raw), 512)]) if chunked else raw
    r = live.http.post(CHAT, content=content, headers={"Content-Type": "application/json"})
    err = _error(r, 413)
    assert err["code"] == "request_too_large"
    assert not live.engine.requests
    assert_serves(live)


def test_prompt_over_server_limit_is_context_length_exceeded(serve: Serve) -> None:
    live = serve(ServerSettings(max_prompt_tokens=30))
    long = chat_body(messages=[{"role": "user", "content": "y" * 20}])  # 37 tokens templated
    err = _error(live.http.post(CHAT, json=long), 400)
    assert err["code"] == "context_length_exceeded" and err["param"] == "messages"
    client = live.openai()
    with pytest.raises(openai.BadRequestError, match="context length"):
        client.chat.completions.create(**long)
    assert not live.engine.requests
    assert_serves(live)


def test_prompt_plus_max_tokens_over_model_len(live: Live) -> None:
    live.engine.delay_s = 0.0
    err = _error(live.http.post(CHAT, json=chat_body(max_tokens=110)), 400)
    assert err["code"] == "context_length_exceeded" and err["param"] == "max_tokens"
    assert "109" in err["message"]  # says how many would fit
    ok = live.http.post(CHAT, json=chat_body(max_tokens=109))
    assert ok.status_code == 200
    no_max = chat_body()
    del no_max["max_tokens"]
    r = live.http.post(CHAT, json=no_max)
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 109
    assert [rec.params.max_tokens for rec in live.engine.requests.values()] == [109, 109]


def test_engine_value_error_before_first_event_is_400(live: Live) -> None:
    body = {"model": "fake-model", "prompt": "z" * 110, "max_tokens": 5}
    err = _error(live.http.post(COMPLETIONS, json=body), 400)
    assert "never fit the KV cache" in err["message"]
    stream = live.http.post(COMPLETIONS, json={**body, "stream": True})
    assert "never fit" in _error(stream, 400)["message"]
    assert_serves(live)


def test_overload_is_429_with_retry_after(serve: Serve) -> None:
    live = serve(ServerSettings(max_waiting=8, retry_after_s=3))
    live.engine.waiting = 8
    r = live.http.post(CHAT, json=chat_body())
    err = _error(r, 429)
    assert r.headers["Retry-After"] == "3"
    assert err["code"] == "rate_limit_exceeded"
    live.engine.waiting = 7
    assert_serves(live)
    metrics = scrape(live.http.get("/metrics").text)
    assert metrics.value("kairos_andes_http_requests_total", code="429") == 1


def test_unknown_route_and_method_answer_openai_errors(live: Live) -> None:
    assert _error(live.http.get("/v1/nope"), 404)["type"] == "invalid_request_error"
    assert _error(live.http.get(CHAT), 405)["message"]


def test_unknown_top_level_fields_are_ignored(live: Live) -> None:
    extras = {"frequency_penalty": 0, "logit_bias": {"1": 2}, "user": "u1", "metadata": {}}
    r = live.http.post(CHAT, json=chat_body(**extras))
    assert r.status_code == 200, r.text


def test_requests_still_uploading_do_not_count_towards_the_overload_bound(serve: Serve) -> None:
    """A body still on its way in is not queued work, so a slow upload cannot turn a
    complete request away; it counts only once it is received in full."""
    live = serve(ServerSettings(max_waiting=1))
    raw = json.dumps(chat_body()).encode()

    def slow_body() -> Any:
        yield raw[:10]
        time.sleep(0.6)
        yield raw[10:]

    result: dict[str, int] = {}

    def upload() -> None:
        with httpx.Client(base_url=live.url, timeout=5) as c:
            r = c.post(CHAT, content=slow_body(), headers={"Content-Type": "application/json"})
            result["status"] = r.status_code

    t = threading.Thread(target=upload)
    t.start()
    time.sleep(0.3)  # the slow request is now inside the server, reading its body
    r = live.http.post(CHAT, json=chat_body())
    assert r.status_code == 200, r.text
    t.join(5)
    assert result["status"] == 200
    assert_serves(live)  # once it was handed over and answered, the slot is free again
