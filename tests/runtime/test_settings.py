"""The server settings every system shares (`kairos.runtime.settings`) and the one 429."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from kairos.andes.server.settings import ServerSettings
from kairos.orloj.runtime.server import RuntimeSettings
from kairos.runtime.settings import HTTPSettings, OverloadSettings
from kairos.venn.service.app import ServiceSettings

ALL: list[type[HTTPSettings]] = [ServerSettings, RuntimeSettings, ServiceSettings]


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(
    ("field", "value"),
    [("port", 70_000), ("api_key", ""), ("max_body_bytes", 10), ("log_level", "loud")],
)
def test_every_server_validates_the_shared_fields_alike(
    cls: type[BaseModel], field: str, value: object
) -> None:
    with pytest.raises(ValidationError, match=field):
        cls.model_validate({field: value})


@pytest.mark.parametrize("cls", ALL)
def test_every_server_is_loopback_without_a_key_and_refuses_unknown_keys(
    cls: type[HTTPSettings],
) -> None:
    s = cls()
    assert (s.host, s.api_key, s.log_level) == ("127.0.0.1", None, "info")
    with pytest.raises(ValidationError, match="hots"):
        cls.model_validate({"hots": "0.0.0.0"})
    with pytest.raises(ValidationError):
        s.port = 1  # type: ignore[misc]  # frozen: settings are read once at startup


def test_each_server_keeps_its_own_body_limit() -> None:
    assert ServerSettings().max_body_bytes == 1 << 20  # long prompts
    assert RuntimeSettings().max_body_bytes == 64 * 1024
    assert ServiceSettings().max_body_bytes == 16 * 1024


@pytest.mark.parametrize("cls", [ServerSettings, RuntimeSettings])
def test_overloaded_is_one_429_with_retry_after(cls: type[OverloadSettings]) -> None:
    err = cls(retry_after_s=3).overloaded("The server is overloaded (9 open)")
    assert err.status == 429 and err.headers == {"Retry-After": "3"}
    body = json.loads(bytes(err.response().body))  # starlette types it bytes | memoryview
    assert body["error"]["code"] == "rate_limit_exceeded"
    assert body["error"]["message"] == "The server is overloaded (9 open); retry after 3 s."


def test_serve_starts_any_app_as_its_settings_say(monkeypatch: pytest.MonkeyPatch) -> None:
    import kairos.runtime.http as http_module

    calls: list[tuple[object, ...]] = []
    monkeypatch.setattr(http_module, "run_server", lambda *a, **kw: calls.append((*a, kw)))
    settings = ServiceSettings(host="::1", port=9000, log_level="warning", graceful_shutdown_s=0)
    http_module.serve("app", settings)
    assert calls == [("app", "::1", 9000, "warning", {"graceful_shutdown_s": 0})]
