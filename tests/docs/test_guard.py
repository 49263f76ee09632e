"""The docs test fails on broken docs: mutants of real examples and of markers.

Each mutant is a doc that the docs test must refuse, named by file:line: a misspelled option in
a documented command, a Python example that raises, an Optuna space that misses the workload's
dimensions, a curl without its JSON header against the real server, a marker without a reason
or of an unknown kind, a command block left untagged. The unmutated examples are cases of
tests/docs/test_examples.py, so each failure here is the mutation's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.examples import REPO, Block, DocError, command_like, commands, parse
from tests.docs.run_example import ExampleFailed, move_ports, run_block

pytestmark = pytest.mark.serial


def _mutant(tmp_path: Path, doc: str, original: str, mutated: str) -> tuple[Path, list[Block]]:
    """The real doc with one example changed, saved under tmp_path; its blocks."""
    text = (REPO / doc).read_text()
    assert text.count(original) == 1, f"{doc} no longer shows {original!r}: update this mutant"
    path = tmp_path / "docs" / Path(doc).name
    path.parent.mkdir(parents=True)
    path.write_text(text.replace(original, mutated))
    return path, parse(path.read_text(), path)


def _block_at(blocks: list[Block], needle: str) -> Block:
    return next(block for block in blocks if needle in block.text)


def _line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_misspelled_option_fails_naming_its_line(tmp_path: Path) -> None:
    path, blocks = _mutant(
        tmp_path, "docs/orloj.md", "orloj workloads ", "orloj workloads --bogus-option "
    )
    block = _block_at(blocks, "--bogus-option")
    with pytest.raises(ExampleFailed) as failed:
        run_block(block, tmp_path / "run")
    line = _line_of(path, "--bogus-option")
    assert str(failed.value).startswith(f"{path}:{line}: ")
    assert "No such option" in str(failed.value)


def test_a_python_example_that_raises_fails_naming_its_line(tmp_path: Path) -> None:
    path, blocks = _mutant(
        tmp_path, "docs/venn.md", 'make_policy("venn")', 'make_policy("no-such-policy")'
    )
    block = _block_at(blocks, "no-such-policy")
    with pytest.raises(ExampleFailed) as failed:
        run_block(block, tmp_path / "run")
    line = _line_of(path, "no-such-policy")
    assert str(failed.value).startswith(f"{path}:{line}: the example raised")
    assert "no-such-policy" in str(failed.value)


def test_an_optuna_space_short_of_the_workloads_dimensions_fails_at_its_line(
    tmp_path: Path,
) -> None:
    """The space of one dimension that a 4-dimensional workload cannot read."""
    path, blocks = _mutant(tmp_path, "docs/fluid.md", "range(workload.dims)", "range(1)")
    block = _block_at(blocks, "range(1)")
    with pytest.raises(ExampleFailed) as failed:
        run_block(block, tmp_path / "run")
    line = _line_of(path, "result = simulate(workload, tuner")
    assert str(failed.value).startswith(f"{path}:{line}: the example raised")
    assert "must name exactly x0, x1, x2, x3" in str(failed.value)


def test_a_curl_without_its_json_header_fails_against_the_real_server(tmp_path: Path) -> None:
    path, blocks = _mutant(tmp_path, "docs/orloj.md", "-H 'Content-Type: application/json' ", "")
    block = _block_at(blocks, "v1/infer")
    with pytest.raises(ExampleFailed) as failed:
        run_block(block, tmp_path / "run")
    line = _line_of(path, "v1/infer")
    assert str(failed.value).startswith(f"{path}:{line}: ")
    assert "Content-Type" in str(failed.value)


def _doc(tmp_path: Path, text: str) -> list[Block]:
    path = tmp_path / "doc.md"
    path.write_text(text)
    return parse(text, path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<!-- example: not run: -->\n```bash\nkairos --help\n```\n", "needs a reason"),
        ("<!-- example: not run -->\n```bash\nkairos --help\n```\n", "unknown example marker"),
        ("<!-- example: skip: slow -->\n```bash\nkairos --help\n```\n", "unknown example marker"),
        ("<!-- example: not run: slow -->\n\n```bash\nkairos --help\n```\n", "before no block"),
        ("<!-- example: not run: slow -->\n", "before no block"),
        ("text <!-- example: not run: slow -->\n```bash\nkairos\n```\n", "one whole line"),
        ("<!-- example: not run: a tree -->\n```\nsrc/\n```\n", "untagged block"),
        ("```bash\nkairos --help\n", "never closed"),
    ],
)
def test_a_bad_marker_or_fence_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(DocError, match=problem):
        _doc(tmp_path, text)


def test_a_marked_block_carries_its_reason(tmp_path: Path) -> None:
    text = "<!-- example: not run: serves until Ctrl-C -->\n```bash\nkairos serve\n```\n"
    (block,) = _doc(tmp_path, text)
    assert block.not_run == "serves until Ctrl-C" and block.line == 2


def test_an_untagged_command_block_is_found(tmp_path: Path) -> None:
    text = "```\nsrc/kairos/  the package\n```\n```\n.venv/bin/kairos --help\n```\n"
    tree, command = _doc(tmp_path, text)
    assert not command_like(tree) and command_like(command)


def test_commands_join_continuations_and_skip_comments(tmp_path: Path) -> None:
    text = "```bash\n# a comment\nkairos a \\\n    --b 1   # note\n\nkairos c\n```\n"
    (block,) = _doc(tmp_path, text)
    assert [(c.line, c.text) for c in commands(block)] == [
        (2, "kairos a --b 1   # note"),
        (5, "kairos c"),
    ]


def test_a_servers_port_moves_with_its_clients_and_must_be_shown(tmp_path: Path) -> None:
    text = (
        "```bash\n.venv/bin/kairos venn serve --port 8000\n"
        "curl -s http://127.0.0.1:8000/health\n.venv/bin/kairos venn devices --n 8000\n```\n"
    )
    (block,) = _doc(tmp_path, text)
    serve, curl, devices = move_ports(block, commands(block))
    port = serve.text.removeprefix(".venv/bin/kairos venn serve --port ")
    assert port != "8000" and curl.text == f"curl -s http://127.0.0.1:{port}/health"
    assert devices.text.endswith("--n 8000")
    (hidden,) = _doc(tmp_path, "```bash\n.venv/bin/kairos venn serve\n```\n")
    with pytest.raises(DocError, match="must show its --port"):
        move_ports(hidden, commands(hidden))
