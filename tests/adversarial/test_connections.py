"""Clients that misbehave on the wire: stalls mid-header and mid-body, hang-ups at every stage,
and floods past the queue bound. Real work goes on beside them, and each case ends with the
server healthy and nothing left over."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import httpx

from tests.adversarial.targets import AUTH, BODY_TIMEOUT_S, MAX_WAITING, Target

STALLED = MAX_WAITING + 8  # more stalled clients than the queue holds


def raw(target: Target) -> socket.socket:
    s = socket.create_connection((target.server.host, target.server.port), timeout=30)
    return s


def head(target: Target, path: str, length: int) -> bytes:
    auth = AUTH["Authorization"]
    return (
        f"POST {path} HTTP/1.1\r\nHost: {target.server.host}\r\nAuthorization: {auth}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def status_of(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return 0  # closed without an answer
        data += chunk
    return int(data.split(b" ", 2)[1])


def test_stalled_bodies_do_not_turn_real_requests_away_and_time_out(target: Target) -> None:
    """Connections that sent headers and part of a body used to count against the queue, so
    real requests got 429 for as long as they stayed open."""
    endpoint = target.endpoints[0]
    body = json.dumps(endpoint.valid()).encode()
    with ExitStack() as stack:
        stalled = []
        for _ in range(STALLED):
            s = stack.enter_context(raw(target))
            s.sendall(head(target, endpoint.path, len(body)) + body[: len(body) // 2])
            stalled.append(s)
        time.sleep(0.2)
        with target.client() as c:
            target.normal(c)  # served while they stall
        t0 = time.monotonic()
        codes = [status_of(s) for s in stalled]
        assert set(codes) == {408}, codes  # each told why, once its time ran out
        assert time.monotonic() - t0 < BODY_TIMEOUT_S * 10
    target.assert_healthy()


def test_stalled_headers_do_not_block_service(target: Target) -> None:
    with ExitStack() as stack:
        for _ in range(STALLED):
            s = stack.enter_context(raw(target))
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Ty")
        with target.client() as c:
            target.normal(c)
    target.assert_healthy()


def test_hang_ups_at_every_stage_leave_nothing_behind(target: Target) -> None:
    for endpoint in target.endpoints:
        body = json.dumps(endpoint.valid()).encode()
        stages = [
            head(target, endpoint.path, len(body))[:20],  # mid-request-line
            head(target, endpoint.path, len(body)),  # headers only
            head(target, endpoint.path, len(body)) + body[:5],  # mid-body
            head(target, endpoint.path, len(body)) + body,  # whole request, no wait for answer
        ]
        for payload in stages:
            for _ in range(4):
                with raw(target) as s:
                    s.sendall(payload)
                    s.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                    )
    target.assert_healthy()


def test_streams_cut_mid_body_free_their_work(target: Target) -> None:
    """Clients that read a little of an answer and hang up (a stream for Andes)."""
    endpoint = target.endpoints[0]
    body = {**endpoint.valid()}
    if target.name == "andes":
        body.update(stream=True, max_tokens=64, ignore_eos=True)
    for _ in range(6):
        with (
            httpx.Client(base_url=target.url, headers=AUTH, timeout=30) as c,
            c.stream("POST", endpoint.path, json=body) as r,
        ):
            assert r.status_code < 500
            for _chunk in r.iter_bytes():
                break  # hang up after the first bytes
    target.assert_healthy()


def test_a_flood_past_the_queue_bound_gets_429s_not_errors(target: Target) -> None:
    endpoint = target.endpoints[0]
    body = {**endpoint.valid()}
    if target.name == "andes":
        body.update(max_tokens=48, ignore_eos=True)

    def one(_: int) -> httpx.Response:
        with httpx.Client(base_url=target.url, headers=AUTH, timeout=60) as c:
            return c.post(endpoint.path, json=body)

    with ThreadPoolExecutor(4 * MAX_WAITING) as pool:
        answers = list(pool.map(one, range(8 * MAX_WAITING)))
    codes = [r.status_code for r in answers]
    assert all(c < 500 for c in codes), codes
    assert set(codes) <= {200, 201, 429}, codes
    if target.state.get("queue_bound", True):  # Venn has no queue: its work is a row each
        assert 429 in codes, codes
    for r in answers:
        if r.status_code == 429:
            assert int(r.headers["retry-after"]) >= 0
    target.assert_healthy()
