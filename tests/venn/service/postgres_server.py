"""A throw-away PostgreSQL server for the store tests: `initdb` in a temporary directory, run
as an unprivileged user (initdb and postgres refuse root), listening only on a Unix socket in
that directory. It fails loudly, naming what went wrong, when the server cannot start: a
PostgreSQL test never skips.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/local/bin", "/usr/bin")
USER = "nobody"


class PostgresUnavailable(RuntimeError):
    """PostgreSQL could not be started here: the message says which step failed."""


def _binary(name: str) -> str:
    for d in BIN_DIRS:
        path = Path(d) / name
        if path.exists():
            return str(path)
    found = shutil.which(name)
    if found is None:
        raise PostgresUnavailable(
            f"no {name} in {', '.join(BIN_DIRS)} or PATH: install postgresql-15 (.ci/run does)"
        )
    return found


def _as_user(argv: list[str]) -> list[str]:
    """Run `argv` as the unprivileged user when we are root; as ourselves otherwise."""
    if os.geteuid() != 0:
        return argv
    ent = pwd.getpwnam(USER)
    return ["setpriv", f"--reuid={ent.pw_uid}", f"--regid={ent.pw_gid}", "--clear-groups", *argv]


@dataclass
class PostgresServer:
    root: Path
    process: subprocess.Popen[bytes]
    dbname: str = "postgres"

    @property
    def socket_dir(self) -> Path:
        return self.root

    @property
    def url(self) -> str:
        """A libpq URL on the Unix socket (no TCP)."""
        user = USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        return f"postgresql://{user}@/{self.dbname}?host={self.root}"

    def database(self, name: str) -> str:
        """Create database `name` and return its URL: one per test keeps tests apart."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.replace(f"/{self.dbname}?", f"/{name}?")

    def shut_down(self) -> None:
        """Stop the server, keeping its data (fast shutdown: open connections are cut)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self, down_s: float = 0.0, timeout_s: float = 60.0) -> None:
        """Shut down, stay down `down_s` seconds, start again on the same data and socket:
        what a database restart looks like to its clients."""
        self.shut_down()
        time.sleep(down_s)
        self.process = _launch(self.root)
        _wait_accepting(self, timeout_s)

    def stop(self) -> None:
        self.shut_down()
        shutil.rmtree(self.root, ignore_errors=True)


def start(timeout_s: float = 60.0) -> PostgresServer:
    """initdb + postgres in a fresh directory; raises PostgresUnavailable with the log."""
    initdb = _binary("initdb")
    root = Path(tempfile.mkdtemp(prefix="kairos-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        ent = pwd.getpwnam(USER)
        os.chown(root, ent.pw_uid, ent.pw_gid)
    os.chmod(root, 0o755)
    init = subprocess.run(
        _as_user([initdb, "-D", str(data), "-A", "trust", "-U", _user(), "--no-sync"]),
        capture_output=True,
        text=True,
    )
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(f"initdb failed ({init.returncode}): {init.stderr[-2000:]}")
    server = PostgresServer(root, _launch(root))
    _wait_accepting(server, timeout_s)
    return server


def _launch(root: Path) -> subprocess.Popen[bytes]:
    log = open(root / "postgres.log", "ab")  # noqa: SIM115 (the server writes it until stopped)
    argv = [_binary("postgres"), "-D", str(root / "data"), "-k", str(root), "-c",
            "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=200", "-c",
            "shared_buffers=32MB"]  # fmt: skip
    return subprocess.Popen(_as_user(argv), stdout=log, stderr=subprocess.STDOUT)


def _wait_accepting(server: PostgresServer, timeout_s: float) -> None:
    """Until the server takes a connection; raises PostgresUnavailable with its log."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            text = (server.root / "postgres.log").read_text(errors="replace")[-2000:]
            shutil.rmtree(server.root, ignore_errors=True)
            raise PostgresUnavailable(f"postgres exited ({server.process.returncode}): {text}")
        try:
            psycopg.connect(server.url, connect_timeout=2).close()
            return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                server.stop()
                raise PostgresUnavailable(
                    f"postgres did not accept connections in {timeout_s} s: {exc}"
                ) from exc
            time.sleep(0.1)


def _user() -> str:
    return USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
