"""The documented examples: every fenced block of README.md and docs/*.md, with its marker.

A block tagged ``bash``, ``sh``, ``console`` or ``python`` is an example: the docs test runs it
as written, unless the line just before its opening fence is a marker saying why it cannot run::

    <!-- example: not run: serves until Ctrl-C; tests/orloj/runtime/test_cli.py runs it -->

A marker without a reason, a marker of another kind, or a marker that stands before no block is
an error, so an example cannot drop out of the test silently. Untagged blocks are text (file
trees, diagrams); `command_like` finds those that are really commands, which must be tagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LANGUAGES = ("bash", "sh", "console", "python")
SHELLS = ("bash", "sh", "console")

FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[^\s`]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*example\s*:(?P<body>.*?)-->\s*$")
NOT_RUN = re.compile(r"^\s*not run\s*:(?P<reason>.*)$")
ANY_MARKER = re.compile(r"<!--\s*example\b")
# first words that make an untagged block a command a reader would type
COMMAND_WORDS = re.compile(
    r"^\s*(\$\s+)?(\.venv\S*/bin/|kairos\b|make\b|python3?\b|pip\b|curl\b|vllm\b|ray\b|export\b)"
)


def shown(path: Path) -> Path:
    """A doc's path as messages name it: relative to the repository when inside it."""
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


class DocError(ValueError):
    """A doc's examples cannot be read: an unclosed fence, a bad or stray marker."""


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its tag, its text (indent removed) and its marker."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    not_run: str | None  # the marker's reason; None: the block runs

    @property
    def where(self) -> str:
        return f"{shown(self.path)}:{self.line}"

    @property
    def is_example(self) -> bool:
        return self.lang in LANGUAGES

    def doc_line(self, block_line: int) -> str:
        """`file:line` of the block's 1-based line `block_line`."""
        return f"{shown(self.path)}:{self.line + block_line}"


def _marker_reason(line: str, where: str) -> str | None:
    """The reason of a `not run` marker on this line; None when the line is no marker."""
    found = MARKER.match(line)
    if found is None:
        if ANY_MARKER.search(line):
            raise DocError(
                f"{where}: an example marker must be one whole line `<!-- example: ... -->`"
            )
        return None
    body = found.group("body")
    not_run = NOT_RUN.match(body)
    if not_run is None:
        raise DocError(
            f"{where}: unknown example marker {body.strip()!r}; known: 'not run: REASON'"
        )
    reason = not_run.group("reason").strip()
    if not reason:
        raise DocError(
            f"{where}: a 'not run' marker needs a reason: `<!-- example: not run: WHY -->`"
        )
    return reason


def parse(text: str, path: Path) -> list[Block]:
    """Every fenced block of one Markdown text, in order."""
    lines = text.split("\n")
    name = shown(path)
    blocks: list[Block] = []
    pending: tuple[int, str] | None = None  # (line, reason) of a marker awaiting its block
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            reason = _marker_reason(lines[i], f"{name}:{i + 1}")
            if pending is not None:
                raise DocError(f"{name}:{pending[0]}: the example marker stands before no block")
            pending = None if reason is None else (i + 1, reason)
            i += 1
            continue
        indent = opening.group("indent")
        end = i + 1
        while end < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[end]):
            end += 1
        if end == len(lines):
            raise DocError(f"{name}:{i + 1}: the fence opened here is never closed")
        body = [line.removeprefix(indent) for line in lines[i + 1 : end]]
        lang = opening.group("lang").lower()
        marker_line, reason = pending if pending is not None else (0, None)
        if reason is not None and lang not in LANGUAGES:
            raise DocError(f"{name}:{marker_line}: a marker on an untagged block")
        blocks.append(Block(path, i + 1, lang, "\n".join(body), reason))
        pending = None
        i = end + 1
    if pending is not None:
        raise DocError(f"{name}:{pending[0]}: the example marker stands before no block")
    return blocks


def doc_paths() -> list[Path]:
    """The documents whose examples are tested: README.md and docs/*.md."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def all_blocks() -> list[Block]:
    return [block for path in doc_paths() for block in parse(path.read_text(), path)]


def command_like(block: Block) -> bool:
    """Whether an untagged block reads as commands to type (then it must be tagged)."""
    first = next((line for line in block.text.splitlines() if line.strip()), "")
    return not block.is_example and COMMAND_WORDS.match(first) is not None


@dataclass(frozen=True)
class Command:
    """One shell command of a block: continuation lines joined, its first line in the block."""

    line: int  # 1-based line within the block
    text: str


def commands(block: Block) -> list[Command]:
    """The block's commands: blank and comment-only lines dropped, `\\` continuations joined.

    A `console` block's commands are its lines starting with `$ `; the rest is their output.
    """
    found: list[Command] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(block.text.split("\n"), start=1):
        line = raw
        if not parts:
            if block.lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = number
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        found.append(Command(start, " ".join(part.strip() for part in parts)))
        parts = []
    if parts:
        raise DocError(f"{block.doc_line(start)}: the command ends in a continuation `\\`")
    return found
