"""The PostgreSQL server the store tests share (one per session: initdb takes a second or
two), a fresh database per test, and the store each backend opens. A PostgreSQL test fails,
never skips, when the server cannot start."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.venn.service.postgres_server import PostgresServer, PostgresUnavailable, start

_names = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    try:
        server = start()
    except PostgresUnavailable as exc:
        pytest.fail(f"PostgreSQL could not start: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def pg_url(postgres: PostgresServer) -> str:
    """A new, empty database on the session's server."""
    return postgres.database(f"venn_{next(_names)}")


BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """What `open_store` takes for each backend: a SQLite file, or a fresh PostgreSQL
    database (created on first use, so SQLite runs need no server)."""
    if request.param == "sqlite":
        path = str(tmp_path / "venn.sqlite")
        return lambda: path
    made: list[str] = []

    def url() -> str:
        if not made:
            made.append(request.getfixturevalue("pg_url"))
        return made[0]

    return url
