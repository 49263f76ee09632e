"""The chat page served by the real server shows the streamed text at the
requested pace, measured from inside the page by headless chromium."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from kairos.andes.engine.engine import LLMEngine
from kairos.runtime.http import BackgroundServer
from tests.andes.browser import chat, chromium


@pytest.fixture(scope="module")
def page(live: tuple[BackgroundServer, LLMEngine]) -> Iterator[Any]:
    server, _ = live
    with chromium() as browser:
        pg = browser.new_page()
        pg.goto(server.url + "/")
        pg.wait_for_function("document.querySelector('#status').textContent === 'ready'")
        yield pg
        pg.close()


@pytest.mark.parametrize("speed", [6.0, 12.0])
def test_page_shows_real_stream_at_requested_pace(
    page: Any, live: tuple[BackgroundServer, LLMEngine], speed: float
) -> None:
    _, engine = live
    page.fill("#max-tokens", "30")
    # sampled, as a chat is: the random model's greedy bytes can stay incomplete UTF-8, which
    # the server holds back, so the whole answer would arrive at once
    page.fill("#temperature", "1")
    finished_before = engine.stats().finished
    ttft = 0.5
    m = chat(page, "Write a short poem.", speed, ttft)
    assert engine.stats().finished == finished_before + 1  # the real engine produced it
    assert m["usage"]["completion_tokens"] >= 1
    assert m["text"] and m["shown"] == m["text"]
    arrivals, releases, start = m["arrivals"], m["releases"], m["start"]
    n = len(releases)
    assert n >= 5
    # the engine outruns a reader: text arrives early and is held to the reading pace
    assert arrivals[-1] < releases[-1] - 0.5
    for j, (r, t) in enumerate(zip(releases, arrivals, strict=True)):
        ideal = start + ttft + j / speed
        assert r >= t and r >= ideal - 1e-6, j
        assert r - max(ideal, t) < 0.15, f"chunk {j} shown {r - ideal:.3f} s after due"
    gaps = [b - a for a, b in itertools.pairwise(releases)]
    assert min(gaps) >= 1 / speed - 1e-6
    assert sum(gaps) / len(gaps) == pytest.approx(1 / speed, rel=0.1)
    assert m["buffer"] == "0" and m["qoe"] == pytest.approx(1.0, abs=1e-9)
