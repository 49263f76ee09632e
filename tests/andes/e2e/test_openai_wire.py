"""The official `openai` client streams from `kairos serve` over a real socket,
and the raw SSE stream has OpenAI's wire format."""

from __future__ import annotations

import json

import httpx
import openai

from kairos.andes.engine.engine import LLMEngine
from kairos.runtime.http import BackgroundServer

MODEL = "kairos-tiny-llama-random"


def test_openai_client_streams_chat(live: tuple[BackgroundServer, LLMEngine]) -> None:
    server, _ = live
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    assert [m.id for m in client.models.list().data] == [MODEL]
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Tell me a story."}],
        stream=True,
        max_tokens=24,
        temperature=0,
        stream_options={"include_usage": True},
        extra_body={"qoe": {"ttft_s": 1.0, "tokens_per_s": 20.0}, "ignore_eos": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[0].choices[0].delta.role == "assistant"
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == "length" and all(f is None for f in finish[:-1])
    usage = chunks[-1].usage
    assert usage is not None and chunks[-1].choices == []
    assert usage.completion_tokens == 24 and usage.total_tokens == usage.prompt_tokens + 24
    # the same request without streaming gives the same greedy text
    full = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Tell me a story."}],
        max_tokens=24,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    assert full.choices[0].message.content == text
    assert full.usage is not None and full.usage.completion_tokens == 24


def test_raw_sse_matches_openai_wire_format(live: tuple[BackgroundServer, LLMEngine]) -> None:
    server, _ = live
    body = {
        "model": MODEL,
        "prompt": "Once upon a time",
        "max_tokens": 10,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream("POST", server.url + "/v1/completions", json=body, timeout=30) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in resp.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    ids = {e["id"] for e in events}
    assert len(ids) == 1 and next(iter(ids)).startswith("cmpl-")
    assert all(e["object"] == "text_completion" and e["model"] == MODEL for e in events)
    *content, usage = events
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 10
    assert all(e["usage"] is None for e in content)
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    assert all(e["choices"][0]["finish_reason"] is None for e in content[:-1])


def test_continuous_usage_counts_every_token(live: tuple[BackgroundServer, LLMEngine]) -> None:
    """vLLM's `continuous_usage_stats`: a chunk's usage says how many tokens it completes, so
    a client counts tokens exactly even when a byte-level token adds no visible text."""
    server, _ = live
    body = {
        "model": MODEL,
        "prompt": "count me",
        "max_tokens": 30,
        "ignore_eos": True,
        "seed": 3,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    with httpx.stream("POST", server.url + "/v1/completions", json=body, timeout=30) as resp:
        events = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: {")]
    counts = [e["usage"]["completion_tokens"] for e in events if e["choices"] and e["usage"]]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert events[-1]["usage"]["completion_tokens"] == 30 and counts[-1] <= 30
