"""One fixture, `target`: each kairos server in turn, live on a real socket for a module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adversarial.targets import BUILDERS, Target


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    with BUILDERS[request.param](tmp_path_factory.mktemp(request.param)) as t:
        yield t
