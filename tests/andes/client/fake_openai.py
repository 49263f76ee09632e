"""A small OpenAI-compatible streaming server for client tests (stdlib, real socket, a thread).

It emits `max_tokens` one-token chunks: the first `ttft` seconds after the request, then one
every `itl` seconds, then a finish chunk, a usage chunk and `[DONE]`. `fail_every=k` answers
every k-th request with HTTP 500; `mode` switches every stream to a failure shape
(`error_event`: an error object after two tokens; `broken`: the connection closes after two
tokens) or to `continuous` (two tokens per chunk with `usage` in every chunk). `emitted` keeps
the `time.perf_counter()` of every token chunk written, per prompt (same process as the client).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up mid-stream (a timeout test) is expected


class FakeOpenAI:
    def __init__(
        self, ttft: float = 0.1, itl: float = 0.05, fail_every: int = 0, mode: str = "ok"
    ) -> None:
        self.ttft, self.itl, self.fail_every, self.mode = ttft, itl, fail_every, mode
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.emitted: dict[str, list[float]] = {}  # prompt -> perf_counter of each token chunk
        self._lock = threading.Lock()
        self._server = _Quiet(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": "fake-model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.bodies.append(body)
                    fake.paths.append(self.path)
                    n = len(fake.bodies)
                if fake.fail_every and n % fake.fail_every == 0:
                    self._json(500, {"error": {"message": "injected failure", "type": "server"}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                fake._stream(self, body)

        return Handler

    def _stream(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        chat = "messages" in body
        emitted = self.emitted.setdefault(
            body["messages"][-1]["content"] if chat else body["prompt"], []
        )
        step = 2 if self.mode == "continuous" else 1

        def send(obj: Any) -> None:
            text = obj if isinstance(obj, str) else json.dumps(obj)
            h.wfile.write(f"data: {text}\n\n".encode())
            h.wfile.flush()

        def choice(text: str, finish: str | None = None) -> dict[str, Any]:
            c: dict[str, Any] = {"index": 0, "finish_reason": finish}
            if chat:
                c["delta"] = {"content": text}
            else:
                c["text"] = text
            return c

        if chat:
            send({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        time.sleep(self.ttft)
        n = int(body["max_tokens"])
        done = 0
        for j in range(0, n, step):
            if j:
                time.sleep(self.itl)
            if j >= 2 and self.mode == "error_event":
                send({"error": {"message": "engine died", "type": "internal"}})
                return
            if j >= 2 and self.mode == "broken":
                return
            done = min(n, j + step)
            chunk: dict[str, Any] = {"choices": [choice(" tok" * (done - j))]}
            if self.mode == "continuous":
                chunk["usage"] = {"prompt_tokens": 3, "completion_tokens": done}
            send(chunk)
            emitted.append(time.perf_counter())
        send({"choices": [choice("", "length")]})
        send({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": done}})
        send("[DONE]")
