"""Bad input gets a clear 4xx and the server keeps serving; 50 concurrent
streams with a fifth of the clients hanging up mid-stream leak no KV block and the rest
finish."""

from __future__ import annotations

import asyncio
import json
import time

import httpx

from kairos.andes.engine.engine import LLMEngine
from kairos.runtime.http import BackgroundServer

MODEL = "kairos-tiny-llama-random"


def good_request(url: str) -> None:
    r = httpx.post(
        url + "/v1/completions",
        json={"model": MODEL, "prompt": "hi", "max_tokens": 4, "ignore_eos": True},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 4


def test_bad_requests_get_clear_errors(live: tuple[BackgroundServer, LLMEngine]) -> None:
    server, eng = live
    url = server.url
    cases: list[tuple[str | bytes, int, str]] = [
        (b'{"model": "kairos-tiny-llama-random", "prompt": ', 400, "JSON"),
        (json.dumps({"model": MODEL, "prompt": "x", "max_tokens": "many"}), 400, "max_tokens"),
        (json.dumps({"model": MODEL, "prompt": "x", "temperature": -1}), 400, "temperature"),
        (json.dumps({"model": MODEL, "prompt": "x" * 2000}), 400, "token"),
        (json.dumps({"model": "gpt-5", "prompt": "x"}), 404, "gpt-5"),
        (json.dumps({"model": MODEL, "prompt": "x", "qoe": {"tokens_per_s": 0}}), 400, "qoe"),
        (json.dumps({"model": MODEL, "prompt": "x" * 70_000}), 413, "bytes"),
    ]
    for body, status, needle in cases:
        r = httpx.post(
            url + "/v1/completions",
            content=body,
            headers={"content-type": "application/json"},
            timeout=30,
        )
        assert r.status_code == status, (body[:60], r.text)
        err = r.json()["error"]
        assert needle.lower() in err["message"].lower(), err
        good_request(url)  # still serving
    r = httpx.post(
        url + "/v1/chat/completions",
        json={"model": MODEL, "messages": "not a list"},
        timeout=30,
    )
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    good_request(url)
    assert eng.stats().free_gpu_blocks == eng.stats().num_gpu_blocks


def test_disconnects_leak_no_blocks(live: tuple[BackgroundServer, LLMEngine]) -> None:
    server, eng = live
    before = eng.stats()
    aborted_before, finished_before = before.aborted, before.finished

    async def client(i: int, http: httpx.AsyncClient) -> tuple[int, str | None]:
        body = {
            "model": MODEL,
            "messages": [{"role": "user", "content": f"stream {i} " * (1 + i % 7)}],
            "max_tokens": 40,
            "temperature": 0.7,
            "seed": i,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        hang_up = i % 5 == 0  # 20% of clients go away mid-stream
        chunks, finish = 0, None
        async with http.stream("POST", "/v1/chat/completions", json=body) as resp:
            assert resp.status_code == 200
            async for line in resp.aiter_lines():
                if not line.startswith("data: {"):
                    continue
                event = json.loads(line[6:])
                if event["choices"]:
                    chunks += 1
                    finish = event["choices"][0]["finish_reason"] or finish
                if hang_up and chunks >= 3:
                    break  # leaving the context closes the connection
        return chunks, finish

    async def run() -> list[tuple[int, str | None]]:
        limits = httpx.Limits(max_connections=60)
        async with httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as http:
            return await asyncio.gather(*(client(i, http) for i in range(50)))

    results = asyncio.run(run())
    for i, (chunks, finish) in enumerate(results):
        if i % 5:
            assert finish == "length", (i, chunks, finish)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        stats = eng.stats()
        if stats.free_gpu_blocks == stats.num_gpu_blocks and not eng.seqs:
            break
        time.sleep(0.05)
    stats = eng.stats()
    assert stats.free_gpu_blocks == stats.num_gpu_blocks, "KV blocks leaked"
    assert eng.scheduler.blocks.cpu.free == eng.scheduler.blocks.cpu.num_blocks
    assert stats.running == stats.waiting == stats.swapped == 0
    # every request ended once, as finished or aborted; each of the 10 hang-ups is aborted
    # unless its last tokens were generated before the server saw the hang-up (seen once on
    # a loaded CI machine: 9 aborted, 41 finished)
    aborted = stats.aborted - aborted_before
    assert aborted + stats.finished - finished_before == 50
    assert 5 <= aborted <= 10
    good_request(server.url)
