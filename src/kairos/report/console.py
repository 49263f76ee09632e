"""The console every command prints through: the terminal's width on a terminal, and wide,
unwrapped lines in a file or a pipe (rich's 80-column default split startup URLs and cut table
headers in logs)."""

from __future__ import annotations

import os
import sys

from rich.console import Console

WIDE = 240  # columns for output that goes to a file or a pipe: wide enough never to cut a line


def make_console(stderr: bool = False) -> Console:
    """A console at the terminal's width, or `WIDE` without wrapping when the output is a file
    or a pipe: rich's 80-column default split startup URLs and cut table headers in logs."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or os.environ.get("COLUMNS"):
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=WIDE, soft_wrap=True)
