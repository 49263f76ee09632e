"""A free TCP port on the loopback interface, for a server or a process group to bind next.

The port is free when this returns; another process may take it before the caller binds it,
which on one test machine is rare enough that callers only need to report the failure clearly.
"""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
