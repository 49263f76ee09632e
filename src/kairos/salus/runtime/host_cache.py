"""Keep freed tensor memory in the process on CPU, as a GPU's caching allocator does.

PyTorch's CPU tensors come from glibc's malloc. By default glibc serves a large block (above
a threshold that starts at 128 KiB) with its own `mmap` and gives it back with `munmap` when
it is freed, and trims the top of its heaps: a training step that allocates and frees the same
large activations every iteration page-faults them in again every iteration (thousands of
faults a step for the zoo's CNN). On a lane thread it is worse than on the main thread, since
each thread gets its own malloc arena, whose heaps glibc shrinks more eagerly; measured here,
the same CNN step took 25% more CPU time on a worker thread than on the main thread. The
service runs every iteration on a lane thread, so that alone was most of its overhead.

Salus on a GPU relies on the framework's caching allocator (freed blocks stay reserved for
the next iteration). `cache_host_memory` gives the CPU device the same behaviour through
`mallopt`: blocks up to 32 MiB (glibc's largest mmap threshold) come from the heaps, and up to
`keep_bytes` of freed memory stays mapped. The process's resident memory then stays at its
peak instead of shrinking between iterations. It is process-wide, so a benchmark's plain loop
in the same process runs under it too. Only glibc has `mallopt`; elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 * 2**20  # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit
_INT_MAX = 2**31 - 1


def cache_host_memory(keep_bytes: int) -> bool:
    """Tell glibc to keep freed memory (up to `keep_bytes`); True if it took the setting."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: musl and macOS lack it)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    keep = max(MMAP_THRESHOLD_MAX, min(keep_bytes, _INT_MAX))
    mmap_ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)
    trim_ok = mallopt(M_TRIM_THRESHOLD, keep)
    return bool(mmap_ok and trim_ok)
