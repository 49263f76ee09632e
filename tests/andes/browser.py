"""Headless Debian chromium for page tests (`playwright install` cannot download browsers
here, so we always drive the system chromium that .ci/run installs)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():  # a missing browser is a failure, never a skip
        pytest.fail(f"{CHROMIUM} is missing (apt-get install -y chromium)", pytrace=False)
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def chat(page: Any, prompt: str, speed: float, ttft: float, timeout_ms: int = 60_000) -> Any:
    """Send one prompt from the chat page; what the page measured once all text is shown."""
    page.fill("#speed", str(speed))
    page.fill("#ttft", str(ttft))
    page.fill("#prompt", prompt)
    page.click("#send")
    _wait(page, "Number(document.querySelector('#buffer').dataset.tokens) > 0", timeout_ms)
    _wait(
        page,
        "window.kairosChat.lastPacer?.done && !document.querySelector('#send').disabled",
        timeout_ms,
    )
    return page.evaluate(
        """() => { const p = window.kairosChat.lastPacer; return {
            start: p.start, arrivals: p.arrivalTimes, releases: p.releaseTimes,
            stalls: p.stalls, qoe: p.qoe(), text: p.text, usage: window.kairosChat.lastUsage,
            shown: [...document.querySelectorAll('#output .assistant')].at(-1).textContent,
            buffer: document.querySelector('#buffer').dataset.tokens,
            qoeShown: Number(document.querySelector('#qoe').dataset.qoe) }; }"""
    )


def _wait(page: Any, condition: str, timeout_ms: int) -> None:
    """Wait for `condition`; on a timeout, fail with what the page showed, so a stall says
    whether the request left, what status the page reached and what the console logged."""
    from playwright.sync_api import TimeoutError as PageTimeout

    try:
        page.wait_for_function(condition, timeout=timeout_ms)
    except PageTimeout:
        seen = page.evaluate(
            """() => ({ status: document.querySelector('#status')?.textContent,
                buffer: document.querySelector('#buffer')?.dataset.tokens,
                send_disabled: document.querySelector('#send')?.disabled,
                pacer: window.kairosChat?.lastPacer ? { done: window.kairosChat.lastPacer.done,
                    arrivals: window.kairosChat.lastPacer.arrivalTimes.length } : null })"""
        )
        raise AssertionError(f"{condition!r} not in {timeout_ms} ms; page: {seen}") from None
