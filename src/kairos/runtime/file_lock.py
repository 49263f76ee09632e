"""One process at a time on a state file: an exclusive `flock` on `<file>.lock`.

Two servers on one SQLite file would each believe they own its state (two Venn services
over-assigned 9 devices for a demand of 5). SQLite's own locks are per transaction, so they
cannot stop that; a lock held for the process's life can. `flock` is released by the kernel
when the holder dies, even by kill -9, so a crashed server never blocks its restart. The lock
file names its holder (pid, host, start time), which the refusal quotes.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path


class FileInUseError(RuntimeError):
    """Another live process holds the file's lock."""


class FileLock:
    """Held from construction until `release()` (or the process's end)."""

    def __init__(self, path: str | Path, what: str = "file") -> None:
        self.target = Path(path)
        self.path = self.target.with_name(self.target.name + ".lock")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise FileInUseError(
                f"{self.target}: this {what} is in use by another process ({holder}); "
                "stop that process or use another file."
            ) from None
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp}".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
