"""Streaming over a real socket: OpenAI's exact SSE wire format, and aborts on disconnect."""

from __future__ import annotations

import concurrent.futures
import json
import time
from collections.abc import Callable

import httpx
import openai
import pytest

from tests.andes.server.conftest import (
    CHAT,
    COMPLETIONS,
    Live,
    Serve,
    assert_serves,
    chat_body,
    read_sse,
)


def _wait_for(cond: Callable[[], bool], timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_openai_client_streams_chat_text(live: Live) -> None:
    stream = live.openai().chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "hello"}],
        max_tokens=6,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "w0 w1 w2 w3 w4 w5 "
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    usage = chunks[-1].usage
    assert usage is not None
    n_prompt = len("<user>hello<assistant>")
    assert (usage.prompt_tokens, usage.completion_tokens) == (n_prompt, 6)
    assert usage.total_tokens == n_prompt + 6


def test_chat_sse_wire_format(live: Live) -> None:
    body = chat_body(max_tokens=3, stream=True, stream_options={"include_usage": True})
    with live.http.stream("POST", CHAT, json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        payloads = read_sse(r)
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    ids = {c["id"] for c in chunks}
    assert len(ids) == 1 and ids.pop().startswith("chatcmpl-")
    for c in chunks:
        assert c["object"] == "chat.completion.chunk"
        assert c["model"] == "fake-model"
        assert isinstance(c["created"], int) and abs(c["created"] - time.time()) < 60
        assert "usage" in c  # include_usage: an explicit null until the usage chunk
    role, *contents, finish, usage = chunks
    assert role["choices"] == [
        {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
    ]
    assert role["usage"] is None
    assert [c["choices"][0]["delta"] for c in contents] == [
        {"content": "w0 "},
        {"content": "w1 "},
        {"content": "w2 "},
    ]
    assert all(c["choices"][0]["finish_reason"] is None for c in contents)
    assert finish["choices"][0]["delta"] == {}
    assert finish["choices"][0]["finish_reason"] == "length"
    assert usage["choices"] == []
    n_prompt = len("<user>hi<assistant>")
    assert usage["usage"] == {
        "prompt_tokens": n_prompt,
        "completion_tokens": 3,
        "total_tokens": n_prompt + 3,
    }


def test_stream_without_include_usage_has_no_usage_key(live: Live) -> None:
    with live.http.stream("POST", CHAT, json=chat_body(stream=True)) as r:
        payloads = read_sse(r)
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert payloads[-1] == "[DONE]"
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_completions_sse_wire_format(live: Live) -> None:
    body = {"model": "fake-model", "prompt": "abc", "max_tokens": 2, "stream": True}
    body["stream_options"] = {"include_usage": True}
    with live.http.stream("POST", COMPLETIONS, json=body) as r:
        payloads = read_sse(r)
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "text_completion" and c["id"].startswith("cmpl-") for c in chunks)
    texts = [c["choices"][0]["text"] for c in chunks if c["choices"]]
    assert texts == ["w0 ", "w1 ", ""]  # no role chunk; the finish chunk has empty text
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 3
    (recorded,) = live.engine.requests.values()
    assert recorded.prompt_ids == [ord("a"), ord("b"), ord("c")]


def test_stop_string_ends_stream_with_stop(live: Live) -> None:
    stream = live.openai().completions.create(
        model="fake-model", prompt="go", max_tokens=50, stop=["w3"], stream=True
    )
    chunks = list(stream)
    assert "".join(c.choices[0].text for c in chunks) == "w0 w1 w2 "
    assert chunks[-1].choices[0].finish_reason == "stop"
    (recorded,) = live.engine.requests.values()
    assert recorded.params.stop == ("w3",)
    assert recorded.params.max_tokens == 50


def test_client_disconnect_mid_stream_aborts_engine_request(serve: Serve) -> None:
    live = serve(delay_s=0.02)
    with live.http.stream("POST", CHAT, json=chat_body(max_tokens=100, stream=True)) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        got = [next(lines) for _ in range(6)]  # role chunk and two tokens, blank lines between
        assert any("w1" in line for line in got)
        assert not live.engine.aborted
    # leaving the block closes the connection mid-stream
    assert _wait_for(lambda: len(live.engine.aborted) == 1), "engine request was not aborted"
    assert not live.engine.finished
    assert_serves(live)


def test_disconnect_while_queued_before_first_token_aborts(serve: Serve) -> None:
    live = serve(first_delay_s=5.0)
    with pytest.raises(httpx.ReadTimeout):
        live.http.post(CHAT, json=chat_body(stream=True), timeout=0.3)
    assert _wait_for(lambda: len(live.engine.aborted) == 1), "queued request was not aborted"


def test_disconnect_during_non_streaming_request_aborts(serve: Serve) -> None:
    live = serve(delay_s=0.02)
    with pytest.raises(httpx.ReadTimeout):
        live.http.post(COMPLETIONS, json={"model": "fake-model", "prompt": "x"}, timeout=0.3)
    assert _wait_for(lambda: len(live.engine.aborted) == 1), "request was not aborted"
    assert not live.engine.finished


def test_engine_failure_mid_stream_sends_error_event(serve: Serve) -> None:
    live = serve(fail_after=2)
    with live.http.stream("POST", CHAT, json=chat_body(max_tokens=10, stream=True)) as r:
        assert r.status_code == 200
        payloads = read_sse(r)
    assert payloads[-1] == "[DONE]"
    error = json.loads(payloads[-2])
    assert set(error["error"]) == {"message", "type", "param", "code"}
    assert error["error"]["type"] == "server_error"
    contents = [json.loads(p)["choices"][0]["delta"].get("content") for p in payloads[1:-2]]
    assert contents == ["w0 ", "w1 "]
    # the official client raises the error event
    client = live.openai(max_retries=0)
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(**chat_body(max_tokens=10, stream=True)))
    live.engine.fail_after = None
    assert_serves(live)


@pytest.mark.parametrize(
    ("reason", "code", "status"), [("abort", "aborted", 503), ("error", "engine_error", 500)]
)
def test_engine_ending_a_request_is_an_error(
    serve: Serve, reason: str, code: str, status: int
) -> None:
    live = serve(finish_with=reason)
    with live.http.stream("POST", CHAT, json=chat_body(stream=True)) as r:
        payloads = read_sse(r)
    assert payloads[-1] == "[DONE]"
    assert json.loads(payloads[-2])["error"]["code"] == code
    chunks = [json.loads(p) for p in payloads[:-2]]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks if c["choices"])
    r2 = live.http.post(CHAT, json=chat_body())
    assert r2.status_code == status and r2.json()["error"]["code"] == code
    live.engine.finish_with = None
    assert_serves(live)


def test_concurrent_streams_are_independent(live: Live) -> None:
    client = live.openai()

    def run(n: int) -> str:
        stream = client.chat.completions.create(**chat_body(max_tokens=n, stream=True))
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(run, range(1, 9)))
    assert texts == ["".join(f"w{i} " for i in range(n)) for n in range(1, 9)]
    engine = live.engine
    assert len(engine.requests) == 8 and len(engine.finished) == 8 and not engine.aborted
