"""The numbers blocks of README.md and docs/*.md are what their templates render from the
result files checked in under docs/results/ (`kairos cite`): a number edited by hand, a result
file re-published without its prose, a template naming a field its file lacks, each fails
naming the file and line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from kairos.report.cited import BLOCK, CITED, CitationError, cite, documents, drift, render

REPO = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.])\d+\.\d+")


def _blocks() -> list[tuple[Path, re.Match[str]]]:
    return [(doc, m) for doc in documents(REPO) for m in BLOCK.finditer(doc.read_text())]


def test_there_are_blocks_and_each_cites_a_result_file_with_its_provenance() -> None:
    blocks = _blocks()
    assert len(blocks) >= 3
    for doc, m in blocks:
        data = json.loads((REPO / CITED / m["file"]).read_text())
        assert "created_at" in data["provenance"], (doc.name, m["file"])
        assert NUMBER.search(m["body"]), (doc.name, m["file"])  # it quotes measured numbers


@pytest.mark.parametrize("doc", documents(REPO), ids=lambda p: p.name)
def test_every_numbers_block_is_what_its_result_file_renders(doc: Path) -> None:
    assert drift(doc.read_text(), REPO, doc.name) == []


def test_a_number_edited_by_hand_is_named_with_its_line() -> None:
    doc, m = _blocks()[0]
    text = doc.read_text()
    hit = NUMBER.search(text, m.start("body"), m.end("body"))
    assert hit is not None
    edited_value = f"{float(hit[0]) * 1.03 + 0.01:.{len(hit[0].split('.')[1])}f}"
    edited = text[: hit.start()] + edited_value + text[hit.end() :]
    line = text.count("\n", 0, hit.start()) + 1
    problems = drift(edited, REPO, doc.name)
    assert len(problems) == 1 and problems[0].startswith(f"{doc.name}:{line}: differs from")


def _nudged(value: Any) -> Any:
    """Every float in a JSON value 3% higher (and 0.01): a re-run that moved every number."""
    if isinstance(value, float):
        return value * 1.03 + 0.01
    if isinstance(value, dict):
        return {k: _nudged(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nudged(v) for v in value]
    return value


def test_a_result_file_republished_without_its_prose_fails(tmp_path: Path) -> None:
    doc, m = _blocks()[0]
    shutil.copytree(REPO / CITED, tmp_path / CITED)
    copy = tmp_path / CITED / m["file"]
    copy.write_text(json.dumps(_nudged(json.loads(copy.read_text()))))
    assert drift(doc.read_text(), tmp_path, doc.name) != []
    shutil.copyfile(REPO / CITED / m["file"], copy)
    assert drift(doc.read_text(), tmp_path, doc.name) == []  # the same file renders the same


def test_a_template_naming_what_its_file_lacks_is_an_error_not_a_blank() -> None:
    with pytest.raises(CitationError, match="no_such_field"):
        render("{{ summary.no_such_field }}", {"summary": {}})
    with pytest.raises(CitationError, match="0 rows match"):
        render('{{ pick(rows, system="absent").x }}', {"rows": [{"system": "ours"}]})
    text = "<!-- numbers: bench/missing.json\n{{ x }}\n-->\nold\n<!-- /numbers -->\n"
    assert drift(text, REPO, "doc.md") == [
        f"doc.md:4: {CITED / 'bench/missing.json'} does not exist "
        "(`kairos cite results/bench/missing.json`)"
    ]


def test_cite_copies_a_result_and_renders_the_blocks_that_quote_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "results" / "bench").mkdir(parents=True)
    result = tmp_path / "results" / "bench" / "speed.json"
    result.write_text(json.dumps({"rows": [{"tok_s": 176.28}]}))
    doc = tmp_path / "docs" / "x.md"
    template = "<!-- numbers: bench/speed.json\n{{ fixed(rows[0].tok_s, 1) }} tok/s\n-->\n"
    doc.write_text(f"# x\n\n{template}<!-- /numbers -->\nafter 2.0\n")
    (tmp_path / "README.md").write_text("# readme\n")
    changed = cite([Path("results/bench/speed.json")], tmp_path)
    assert changed == [tmp_path / CITED / "bench" / "speed.json", doc]
    assert doc.read_text() == f"# x\n\n{template}176.3 tok/s\n<!-- /numbers -->\nafter 2.0\n"
    # refused: a file outside results/, and a broken one (nothing copied)
    with pytest.raises(CitationError, match="is not under"):
        cite([doc], tmp_path)
    result.write_text("{broken")
    with pytest.raises(json.JSONDecodeError):
        cite([Path("results/bench/speed.json")], tmp_path)
    assert json.loads((tmp_path / CITED / "bench" / "speed.json").read_text())["rows"]


def test_the_command_names_a_file_it_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from kairos.cli import app

    monkeypatch.chdir(tmp_path)
    got = CliRunner().invoke(app, ["cite", "elsewhere.json"])
    assert got.exit_code == 2 and "is not under" in got.output, got.output
