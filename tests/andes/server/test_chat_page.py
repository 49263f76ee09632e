"""The chat page's key, error and token-count states, in headless
chromium against the real server with the built-in model on a real socket.

Before the fix the page left the model list at "(loading)" with Send enabled when the server
wanted a key, printed error answers as raw JSON running past the chat box, and called its
count of text pieces "tokens" (a byte-level model's piece can hold several tokens).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.engine.async_engine import AsyncEngine
from kairos.andes.server.app import create_app
from kairos.andes.server.settings import ServerSettings
from kairos.runtime.http import BackgroundServer
from tests.andes.browser import chat, chromium
from tests.andes.e2e.conftest import engine

KEY = "sk-chat-page-test"
WAIT_MS = 30_000  # for states the page reaches in well under a second (CI shares its cores)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    settings = ServerSettings(api_key=KEY, log_level="warning")
    with BackgroundServer(create_app(AsyncEngine(engine()), settings)) as srv:
        yield srv


@pytest.fixture(scope="module")
def model_ids(server: BackgroundServer) -> list[str]:
    r = httpx.get(server.url + "/v1/models", headers={"Authorization": f"Bearer {KEY}"})
    r.raise_for_status()
    return [m["id"] for m in r.json()["data"]]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any, server: BackgroundServer) -> Iterator[Any]:
    pg = browser.new_page()
    pg.goto(server.url + "/")
    yield pg
    pg.close()


def wait_state(page: Any, state: str) -> None:
    page.wait_for_function(
        "s => document.querySelector('#model').dataset.state === s", arg=state, timeout=WAIT_MS
    )


def options(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("#model option", "os => os.map(o => o.textContent)"))


def with_key(page: Any) -> None:
    page.fill("#api-key", KEY)
    wait_state(page, "ready")


def test_without_key_the_page_asks_for_it_and_send_waits_for_a_model(
    page: Any, model_ids: list[str]
) -> None:
    wait_state(page, "need-key")
    assert options(page) == ["enter the API key"]
    assert "API key" in page.text_content("#status")
    assert page.is_disabled("#send") and page.is_disabled("#model")
    page.fill("#prompt", "hello")
    page.press("#prompt", "Enter")  # Enter sends too, so it must also wait for a model
    assert page.locator("#output .msg").count() == 0

    page.fill("#api-key", "sk-wrong")
    wait_state(page, "bad-key")
    assert page.is_disabled("#send")

    page.fill("#api-key", KEY)  # typing the key lists the models again, no reload needed
    wait_state(page, "ready")
    assert options(page) == model_ids
    assert page.input_value("#model") == model_ids[0]
    assert page.is_enabled("#send") and page.text_content("#status") == "ready"


def test_unreachable_server_is_named_and_asked_again(page: Any, model_ids: list[str]) -> None:
    """A refused connection (the browser's fetch rejects) shows "server unreachable" and the
    page retries by itself; it lists the models once the server answers again."""
    wait_state(page, "need-key")
    page.route("**/v1/models", lambda route: route.abort("connectionrefused"))
    page.fill("#api-key", KEY)
    wait_state(page, "unreachable")
    assert options(page) == ["server unreachable"]
    assert page.is_disabled("#send")
    assert "unreachable" in page.text_content("#status")
    page.unroute("**/v1/models")
    wait_state(page, "ready")  # the retry, RETRY_S later, without any input
    assert options(page) == model_ids


def test_error_answer_is_one_readable_line_inside_the_chat_box(page: Any) -> None:
    with_key(page)
    prompt = "x" * 3000  # one unbroken word, and too long for the model's context
    page.fill("#prompt", prompt)
    with page.expect_response("**/v1/chat/completions") as answer:
        page.click("#send")
    assert answer.value.status == 400
    server_error = json.loads(answer.value.text())["error"]
    line = page.locator("#output .msg.error")
    line.wait_for(timeout=WAIT_MS)
    shown = line.text_content()
    assert shown == f"Error 400: {server_error['message']}"
    assert "\n" not in shown and "{" not in shown
    assert page.locator("#output .assistant:not(.error)").count() == 0  # no empty bubble
    # nothing runs past the chat box: neither the error nor the unbroken prompt
    fits = page.evaluate(
        """() => { const out = document.querySelector('#output');
          const box = out.getBoundingClientRect();
          return [...out.children].every(el => {
            const r = el.getBoundingClientRect();
            return r.left >= box.left - 0.5 && r.right <= box.right + 0.5
              && el.scrollWidth <= el.clientWidth + 1; })
            && out.scrollWidth <= out.clientWidth + 1; }"""
    )
    assert fits
    assert page.text_content("#status") == "error 400"
    assert page.input_value("#prompt") == prompt  # kept to edit and send again
    assert page.is_enabled("#send")


def test_token_count_is_the_servers_usage_not_the_pieces(page: Any) -> None:
    with_key(page)
    page.fill("#max-tokens", "40")
    with page.expect_request("**/v1/chat/completions") as sent:
        m = chat(page, "Tell me something.", speed=200.0, ttft=0.0)
    body = json.loads(sent.value.post_data or "{}")
    assert body["stream_options"]["include_usage"], "the page asks for the usage chunk"
    usage = [page.evaluate("() => window.kairosChat.lastUsage")]  # the stream's usage chunk
    assert usage[0] is not None and usage[0]["completion_tokens"] <= 40
    tokens = usage[0]["completion_tokens"]
    pieces = len(m["releases"])
    # the byte-level model's pieces are fewer than its tokens, so the two counts differ
    assert 0 < pieces < tokens
    assert page.get_attribute("#tokens", "data-tokens") == str(tokens)
    assert page.text_content("#tokens") == f"{tokens} tokens"
    status = page.text_content("#status")
    assert status.startswith(f"done · {tokens} tokens · ") and f"{pieces} tokens" not in status


ERRORS_JS = """async (bodies) => {
  const { describe, responseError } = await import('/static/errors.js');
  const out = [];
  for (const [status, body] of bodies) {
    out.push(describe(await responseError(new Response(body, { status }))));
  }
  return out;
}"""

messages = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=600)


@settings(max_examples=20, deadline=None)
@given(
    cases=st.lists(st.tuples(st.sampled_from([400, 401, 413, 429, 500, 503]), messages), min_size=1)
)
def test_any_error_body_becomes_one_bounded_line(
    browser: Any, server: BackgroundServer, cases: list[Any]
) -> None:
    """Whatever message an error object carries (newlines, markup, any length), the chat box
    gets one line of at most 400 characters plus the key hint, never the JSON around it."""
    pg = browser.new_page()
    try:
        pg.goto(server.url + "/health")  # a page of the server's origin, to import from
        bodies = [[status, json.dumps({"error": {"message": msg}})] for status, msg in cases]
        bodies.append([502, "<html><body><h1>502 Bad Gateway</h1></body></html>"])
        shown = pg.evaluate(ERRORS_JS, bodies)
    finally:
        pg.close()
    for (status, msg), line in zip(cases, shown, strict=False):
        hint = " Enter the API key in the settings above." if status == 401 else ""
        assert line.endswith(hint) and "\n" not in line
        text = line.removesuffix(hint)
        assert text.startswith(f"Error {status}: ") and len(text) <= 400
        words = re.sub(r"[\s\x00-\x1f\x7f-\x9f\ufeff]+", " ", msg).strip()  # as JS's \s
        reason = text.removeprefix(f"Error {status}: ").rstrip("…")
        assert reason in words if words else reason == "the server gave no reason"
    assert shown[-1] == "Error 502: 502 Bad Gateway"
