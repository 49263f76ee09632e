"""The headline numbers README.md and docs/*.md quote are the ones `kairos report --publish`
wrote to docs/results/headlines.json: a number edited by hand, or a JSON file regenerated
without the docs, fails here naming the file and line."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from kairos.report.headlines import HEADLINES
from kairos.report.quoted import BLOCK, PUBLISHED, drift, number, sync

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SYSTEMS = [h.system for h in HEADLINES]


@pytest.fixture(scope="module")
def pub() -> dict[str, Any]:
    return json.loads((REPO / PUBLISHED).read_text())


def _blocks(path: Path) -> list[list[str]]:
    return [[s.strip() for s in m["what"].split(",")] for m in BLOCK.finditer(path.read_text())]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_quoted_block_is_what_the_published_results_render(
    doc: Path, pub: dict[str, Any]
) -> None:
    assert drift(doc.read_text(), pub, doc.name) == []


def test_the_readme_quotes_every_system_and_each_doc_its_own() -> None:
    assert _blocks(REPO / "README.md") == [SYSTEMS]
    for system in SYSTEMS:
        assert _blocks(REPO / "docs" / f"{system}.md") == [[system]], system


def test_the_published_rows_are_the_registrys(pub: dict[str, Any]) -> None:
    """A headline added, renamed or given another paper number needs a new --publish."""
    want = [(s.system, h.label, h.paper) for s in HEADLINES for h in s.rows]
    assert [(r["system"], r["label"], r["paper"]) for r in pub["rows"]] == want
    assert all(isinstance(r["ours"], int | float) for r in pub["rows"])
    assert {t["system"] for t in pub["timings"]} == set(SYSTEMS)


def test_a_number_edited_by_hand_is_named_with_its_line(pub: dict[str, Any]) -> None:
    text = (REPO / "README.md").read_text()
    row = pub["rows"][0]
    cell = f"| {number(row['ours'])}"
    start = BLOCK.search(text)
    assert start is not None
    at = text.index(cell, start.start())
    edited = text[:at] + f"| {number(row['ours'] * 1.03 + 0.01)}" + text[at + len(cell) :]
    line = text.count("\n", 0, at) + 1
    assert drift(edited, pub, "README.md") == [
        f"README.md:{line}: differs from {PUBLISHED} (kairos report --publish writes both): "
        f"{edited.splitlines()[line - 1]!r}"
    ]


def test_results_regenerated_without_the_docs_fail(pub: dict[str, Any]) -> None:
    newer = copy.deepcopy(pub)
    newer["rows"][-1]["ours"] = newer["rows"][-1]["ours"] * 1.03 + 0.01
    problems = drift((REPO / "README.md").read_text(), newer, "README.md")
    assert len(problems) == 1 and problems[0].startswith("README.md:"), problems


def test_publish_fills_an_empty_block_and_leaves_the_rest_alone(pub: dict[str, Any]) -> None:
    text = "# doc\n\nbefore 1.5x\n\n<!-- report: venn, salus -->\n<!-- /report -->\nafter 2.0\n"
    filled = sync(text, pub)
    assert drift(filled, pub, "doc.md") == []
    assert filled.startswith("# doc\n\nbefore 1.5x\n\n") and filled.endswith("after 2.0\n")
    quoted = re.findall(r"^\| (\w+) \|", filled, re.M)
    assert set(quoted) == {"system", "venn", "salus"}  # the header and their rows
    assert sync(filled, pub) == filled
