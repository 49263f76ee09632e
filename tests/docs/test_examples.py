"""Every fenced example in README.md and docs/*.md runs as written, or says why it cannot.

One case per runnable block (`test_example[docs/orloj.md:218]`), each in its own temporary
folder (tests/docs/run_example.py). A block that takes minutes or needs what CI lacks carries a
`<!-- example: not run: REASON -->` marker naming what runs the same thing instead
(tests/docs/examples.py). tests/docs/test_guard.py shows that broken docs fail here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.examples import Block, DocError, all_blocks, command_like, doc_paths
from tests.docs.run_example import run_block

# Examples start servers on free ports and time nothing, but several of them at once would
# crowd two cores past the servers' start-up waits: `make test TEST_WORKERS=n` runs them alone.
pytestmark = pytest.mark.serial


def _read() -> tuple[list[Block], str | None]:
    try:
        return all_blocks(), None
    except DocError as error:
        return [], str(error)


BLOCKS, READ_ERROR = _read()
RUNNABLE = [block for block in BLOCKS if block.is_example and block.not_run is None]


def test_the_docs_read_and_every_marker_names_its_reason() -> None:
    assert READ_ERROR is None, READ_ERROR
    marked = [block for block in BLOCKS if block.not_run is not None]
    assert marked and all(block.not_run for block in marked)


def test_no_untagged_block_is_a_command() -> None:
    untagged = [block.where for block in BLOCKS if command_like(block)]
    assert not untagged, (
        f"tag these blocks (bash, python) so the docs test runs or marks them: {untagged}"
    )


def test_every_doc_with_examples_runs_some() -> None:
    runnable = {block.path for block in RUNNABLE}
    tagged = {block.path for block in BLOCKS if block.is_example}
    without = [path.name for path in doc_paths() if path in tagged and path not in runnable]
    assert READ_ERROR is None and not without, f"no runnable example in {without}"


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.where for block in RUNNABLE])
def test_example(block: Block, tmp_path: Path) -> None:
    run_block(block, tmp_path)
