"""Shared fixtures: where the real data lives (../shared/data, never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KAIROS_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA}; set KAIROS_SHARED to the shared/ folder")
    return DATA


# Tests that judge wall-clock behaviour against a model (real servers and workers on the
# machine's speed), drive a browser or restart and flood servers under timeouts, or start a
# Ray cluster. `make test TEST_WORKERS=n` runs them on their own after the rest, which it
# spreads over n processes (pytest-xdist): another test burning a core would change what
# they measure (the chat page's browser test timed out at 60 s beside two workers).
SERIAL = (
    "adversarial/",
    "andes/e2e/",
    "andes/server/test_chat_page.py",
    "auxo/integrations/",
    "experiments/test_sweep.py",
    "fluid/integrations/",
    "fluid/runtime/",
    "orloj/runtime/",
    "report/test_site_browser.py",
    "salus/runtime/",
    "venn/service/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(REPO / "tests").as_posix()
        if where.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
