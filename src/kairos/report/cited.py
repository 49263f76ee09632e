"""Numbers in README.md and docs/*.md rendered from the result files that hold them.

A benchmark or experiment writes its result file under `results/`; a doc that quotes it cites
a checked-in copy under `docs/results/` in a block whose opening comment holds the template of
the text below it:

    <!-- numbers: bench/engine_vs_transformers.json
    {% set r = pick(rows, requests="mixed", system="ours") %}
    ours ran at {{ fixed(r.tok_s, 1) }} tok/s
    -->
    ours ran at 176.3 tok/s
    <!-- /numbers -->

`kairos cite FILE...` copies result files into `docs/results/` (keeping their path under
`results/`) and renders every block again; the docs test renders each block from the
checked-in copy and fails, naming the file and line, when the text below differs. So a
number edited by hand is caught, and so is a result file re-published without its prose.
The template sees the JSON's top-level keys and the helpers below; anything it names that
the file lacks is an error (StrictUndefined), not an empty cell.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

CITED = Path("docs/results")
BLOCK = re.compile(
    r"<!-- numbers: (?P<file>[\w./-]+)\n(?P<template>.*?)\n-->\n(?P<body>.*?)<!-- /numbers -->",
    re.S,
)


class CitationError(ValueError):
    """A block that cannot be rendered: its file is missing, or its template names something
    the file lacks."""


def fixed(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def pct(share: float, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage."""
    return f"{100 * share:.{digits}f}%"


def thousands(x: float) -> str:
    return f"{x:,.0f}"


def ratio(r: Mapping[str, Any], key: str, digits: int = 3) -> str:
    """`key`'s paired ratio as the docs write it: `1.004x [0.926, 1.089], 2/5` from the keys
    `key`, `key_lo`, `key_hi`, `key_wins` and `seeds`."""
    lo, hi = r[f"{key}_lo"], r[f"{key}_hi"]
    return (
        f"{r[key]:.{digits}f}x [{lo:.{digits}f}, {hi:.{digits}f}], {r[f'{key}_wins']}/{r['seeds']}"
    )


def pick(rows: Sequence[Mapping[str, Any]], **match: Any) -> Mapping[str, Any]:
    """The one row whose fields equal `match`."""
    found = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    if len(found) != 1:
        raise CitationError(f"{len(found)} rows match {match}, not one")
    return found[0]


_ENV = SandboxedEnvironment(
    undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True
)
_ENV.globals.update(fixed=fixed, pct=pct, thousands=thousands, ratio=ratio, pick=pick,
                    min=min, max=max)  # fmt: skip


def render(template: str, data: Mapping[str, Any]) -> str:
    """What a block's template renders from its file's data (the body ends with a newline)."""
    try:
        text = _ENV.from_string(template).render(**data)
    except CitationError:
        raise
    except Exception as exc:  # jinja's undefined names, a bad format, a template error
        raise CitationError(f"{type(exc).__name__}: {exc}") from None
    return text if text.endswith("\n") else text + "\n"


def _load(root: Path, file: str) -> dict[str, Any]:
    path = root / CITED / file
    if not path.is_file():
        raise CitationError(f"{CITED / file} does not exist (`kairos cite results/{file}`)")
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise CitationError(f"{CITED / file} is not a JSON object")
    return data


def sync(text: str, root: Path) -> str:
    """`text` with every numbers block rendered afresh from the copies under `root`."""

    def fill(m: re.Match[str]) -> str:
        body = render(m["template"], _load(root, m["file"]))
        return m[0][: m.start("body") - m.start()] + body + "<!-- /numbers -->"

    return BLOCK.sub(fill, text)


def drift(text: str, root: Path, name: str) -> list[str]:
    """Each block of `text` whose text is not what its file renders, as 'name:line: ...'."""
    problems = []
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("body")) + 1
        try:
            want = render(m["template"], _load(root, m["file"]))
        except CitationError as exc:
            problems.append(f"{name}:{line}: {exc}")
            continue
        if m["body"] != want:
            i, got = first_difference(m["body"], want)
            problems.append(
                f"{name}:{line + i}: differs from {CITED / m['file']} "
                f"(kairos cite writes both): {got!r}"
            )
    return problems


def first_difference(got: str, want: str) -> tuple[int, str]:
    """The index of the first line where `got` and `want` differ, and `got`'s line there."""
    got_lines, want_lines = got.splitlines(), want.splitlines()
    i = next(
        (i for i, (a, b) in enumerate(zip(got_lines, want_lines, strict=False)) if a != b),
        min(len(got_lines), len(want_lines)),
    )
    return i, got_lines[i] if i < len(got_lines) else "(missing line)"


def documents(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def rewrite(root: Path, transform: Callable[[str], str]) -> list[Path]:
    """Apply `transform` to README.md and docs/*.md under `root`; the files it changed."""
    changed = []
    for doc in documents(root):
        text = doc.read_text()
        new = transform(text)
        if new != text:
            doc.write_text(new)
            changed.append(doc)
    return changed


def cite(files: Sequence[Path], root: Path) -> list[Path]:
    """Copy each result file (a path under `root/results/`) to `root/docs/results/` and render
    every numbers block of README.md and docs/*.md again; the files changed."""
    changed = []
    for f in files:
        src = f if f.is_absolute() else root / f
        try:
            rel = src.resolve().relative_to((root / "results").resolve())
        except ValueError:
            raise CitationError(f"{f} is not under {root / 'results'}") from None
        json.loads(src.read_text())  # a broken file is refused before it is copied
        dst = root / CITED / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        changed.append(dst)
    return changed + rewrite(root, lambda text: sync(text, root))
