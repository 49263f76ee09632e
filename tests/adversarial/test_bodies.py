"""Malformed and hostile bodies at every JSON endpoint of every server: each gets the 4xx that
names the problem, never a 500 or a reset connection, and the server serves on with nothing
left over."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.adversarial.targets import AUTH, MAX_BODY, Target

JSON = {**AUTH, "content-type": "application/json"}


def deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


def first_number_field(body: dict[str, Any]) -> str | None:
    return next(
        (k for k, v in body.items() if isinstance(v, (int, float)) and not isinstance(v, bool)),
        None,
    )


# (name, body from the endpoint's valid body, headers, the statuses allowed, a word the message has)
Case = tuple[str, Callable[[dict[str, Any]], bytes], dict[str, str], set[int], str]
CASES: list[Case] = [
    ("truncated json", lambda v: json.dumps(v).encode()[:-3], JSON, {400}, "json"),
    ("empty body", lambda v: b"", JSON, {400}, "empty"),
    ("array not object", lambda v: b"[1, 2]", JSON, {400}, "object"),
    ("bad utf-8", lambda v: b'{"name": "\xff\xfe"}', JSON, {400}, "json"),
    ("deep nesting", lambda v: deep(MAX_BODY // 2 - 8), JSON, {400}, "nest"),
    ("NaN literal", lambda v: json.dumps(v)[:-1].encode() + b', "x": NaN}', JSON, {400}, "nan"),
    ("Infinity literal", lambda v: b'{"a": -Infinity}', JSON, {400}, "infinity"),
    (
        "1e999",
        lambda v: (
            json.dumps({**v, (first_number_field(v) or "n"): 1})
            .replace(": 1", ": 1e999", 1)
            .encode()
        ),
        JSON,
        {400},
        "finite",
    ),
    (
        "huge integer",
        lambda v: json.dumps({**v, (first_number_field(v) or "n"): 10**400}).encode(),
        JSON,
        {400},
        "",
    ),
    ("wrong types", lambda v: json.dumps({k: [k] for k in v}).encode(), JSON, {400, 404, 422}, ""),
    (
        "oversize body",
        lambda v: json.dumps({**v, "pad": "x" * (2 * MAX_BODY)}).encode(),
        JSON,
        {413},
        "bytes",
    ),
    (
        "oversize string",
        lambda v: json.dumps(
            {k: ("y" * (MAX_BODY - 200) if isinstance(x, str) else x) for k, x in v.items()}
        ).encode(),
        JSON,
        {200, 201, 400, 404, 413, 422},
        "",
    ),
    (
        "text/plain",
        lambda v: json.dumps(v).encode(),
        {**AUTH, "content-type": "text/plain"},
        {415},
        "json",
    ),
    ("no content type", lambda v: json.dumps(v).encode(), dict(AUTH), {415}, "json"),
    (
        "form post",
        lambda v: b"a=1&b=2",
        {**AUTH, "content-type": "application/x-www-form-urlencoded"},
        {415},
        "json",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_body_gets_a_clear_4xx_and_the_server_serves_on(target: Target, case: Case) -> None:
    name, make, headers, allowed, word = case
    for endpoint in target.endpoints:
        body = make(endpoint.valid())
        r = httpx.post(target.url + endpoint.path, content=body, headers=headers, timeout=30)
        assert r.status_code in allowed, (
            target.name,
            endpoint.path,
            name,
            r.status_code,
            r.text[:300],
        )
        if r.status_code >= 400:
            err = r.json()["error"]  # the shared error shape, never a traceback
            assert isinstance(err["message"], str) and err["message"]
            assert word in err["message"].lower(), (name, err)
    target.assert_healthy()


def test_unknown_fields_are_refused_or_ignored_never_a_500(target: Target) -> None:
    for endpoint in target.endpoints:
        body = {**endpoint.valid(), "surprise": {"nested": [1, 2, 3]}}
        r = httpx.post(target.url + endpoint.path, json=body, headers=AUTH, timeout=30)
        assert r.status_code < 500, r.text
        if r.status_code >= 400:
            assert "surprise" in r.json()["error"]["message"]
    target.assert_healthy()
