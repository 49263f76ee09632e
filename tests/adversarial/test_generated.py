"""Bodies generated from each server's own request schema (hypothesis): every field of a valid
body may be replaced by any JSON value or dropped, and unknown fields added. Whatever comes,
the answer is a success or a 4xx in the shared error shape, never a 5xx, and the server is
healthy afterwards."""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adversarial.targets import AUTH, Endpoint, Target

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# generation length is the one field left alone: the body under test, not the model's speed
KEEP = {"max_tokens", "max_completion_tokens", "stream"}


@st.composite
def mutated(draw: st.DrawFn, valid: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    body = dict(valid)
    for name in draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields))):
        if name in KEEP:
            continue
        if draw(st.booleans()):
            body.pop(name, None)
        else:
            body[name] = draw(json_values)
    body.update(
        draw(st.dictionaries(st.sampled_from(["extra", "qoe", "x"]), json_values, max_size=2))
    )
    return body


def never_a_5xx(url: str, endpoint: Endpoint) -> None:
    fields = sorted(set(endpoint.schema.model_fields) | set(endpoint.valid()))

    @settings(
        max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
    )
    @given(body=mutated(endpoint.valid(), fields))
    def one(body: dict[str, Any]) -> None:
        r = httpx.post(url + endpoint.path, json=body, headers=AUTH, timeout=60)
        assert r.status_code < 500, (body, r.status_code, r.text[:300])
        if r.status_code >= 400:
            assert r.json()["error"]["message"]

    one()


def test_generated_bodies_never_get_a_5xx(target: Target) -> None:
    for endpoint in target.endpoints:
        never_a_5xx(target.url, endpoint)
    target.assert_healthy()
