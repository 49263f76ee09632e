"""Progress a reader can see wherever the output goes.

In a terminal a rich bar (gone when done); anywhere else (a pipe, a CI log, `nohup`) a rich bar
draws nothing, so a long experiment would say nothing for minutes: there a plain line goes to
stderr as work completes, at most one every `EVERY_S` seconds, plus the last one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress

EVERY_S = 5.0
Advance = Callable[[int], None]


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)  # sys.stderr as it is now (tests swap it)


@contextmanager
def progress(description: str, total: int, enabled: bool = True) -> Iterator[Advance]:
    """Yields `advance(n)`: `n` more of `total` units are done."""
    console = _stderr()
    if not enabled:
        yield lambda n: None
        return
    if console.is_terminal:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)
        return
    start = time.monotonic()
    done, said = 0, -EVERY_S

    def advance(n: int) -> None:
        nonlocal done, said
        done += n
        now = time.monotonic() - start
        if n and (now - said >= EVERY_S or done >= total):
            console.print(f"{description}: {done}/{total} ({now:.0f} s)")
            said = now

    yield advance


def note(message: str, since: float | None = None) -> None:
    """One line of what a long step-by-step run is doing, to stderr (`since`: a `monotonic`
    start to show the time from)."""
    elapsed = f" ({time.monotonic() - since:.0f} s)" if since is not None else ""
    _stderr().print(f"{message}{elapsed}")
