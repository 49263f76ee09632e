"""Running one documented example as a reader would, in a fresh folder.

The folder looks like a checkout to the example: `.venv`, `benchmarks` and `tests` link to the
repository's, and `../shared` to the shared data (KAIROS_SHARED), so `.venv/bin/kairos ...` and
`--trace ../shared/data/...` work as written, while whatever the example writes (results,
calibrations, decision logs) lands in the temporary folder.

Shell blocks run one command at a time (`bash -e -o pipefail`), so a failure names its line. A
`kairos ... serve` command is what a reader would run in a second terminal: it starts in the
background, the next command waits for its port, and the server gets Ctrl-C when the block
ends. Its `--port P` (required) moves to a free port, and so does every `:P` in the block (the
clients' URLs), so examples never collide with a server already running on the machine.
Python blocks run as a script in a fresh interpreter of the project's virtual environment.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from kairos.runtime.ports import free_port
from tests.conftest import SHARED
from tests.docs.examples import REPO, SHELLS, Block, Command, DocError, commands

# A loaded 2-core CI machine: a block's whole run, and a server's start-up (imports, a model).
BLOCK_TIMEOUT_S = 240.0
SERVER_START_S = 120.0
LINKED = (".venv", "benchmarks", "tests")
SERVER = re.compile(r"(^|[\s/])kairos(\s+[a-z]+)?\s+serve\b")
PORT = re.compile(r"--port[ =](\d+)\b")


class ExampleFailed(AssertionError):
    """A documented example did not run as written; the message names its file:line."""


def workdir(root: Path) -> Path:
    """A checkout-shaped folder under `root` for one example; returns the folder to run in."""
    checkout = root / "kairos"
    checkout.mkdir(parents=True)
    for name in LINKED:
        (checkout / name).symlink_to(REPO / name)
    (root / "shared").symlink_to(SHARED)
    return checkout


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["KAIROS_SHARED"] = str(SHARED)
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "120"
    env.pop("VIRTUAL_ENV", None)
    return env


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def move_ports(block: Block, found: list[Command]) -> list[Command]:
    """The commands with every server's documented port moved to a free one."""
    moved: dict[str, str] = {}
    for command in found:
        if SERVER.search(command.text):
            port = PORT.search(command.text)
            if port is None:
                raise DocError(
                    f"{block.doc_line(command.line)}: a server example must show its --port "
                    "(and its clients the URL), so the test can move it to a free port"
                )
            moved[port.group(1)] = str(free_port())
    out = []
    for command in found:
        text = command.text
        for old, new in moved.items():
            text = re.sub(rf"(:|--port[ =]){old}\b", rf"\g<1>{new}", text)
        out.append(Command(command.line, text))
    return out


def _wait_for_port(port: int, server: subprocess.Popen[bytes], log: Path, where: str) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise ExampleFailed(
                f"{where}: the server exited {server.returncode} before listening\n"
                f"{_tail(log.read_text(errors='replace'))}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.2)
    raise ExampleFailed(f"{where}: the server did not listen within {SERVER_START_S:.0f} s")


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as the reader would; killed if it does not end in 20 s."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def run_shell(block: Block, cwd: Path, env: dict[str, str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    servers: list[subprocess.Popen[bytes]] = []
    try:
        for number, command in enumerate(move_ports(block, commands(block))):
            where = block.doc_line(command.line)
            if SERVER.search(command.text):
                log = cwd / f"server_{number}.log"
                with log.open("wb") as out:
                    server = subprocess.Popen(
                        ["bash", "-c", f"exec {command.text}"],
                        cwd=cwd,
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                servers.append(server)
                port = PORT.search(command.text)
                assert port is not None  # move_ports checked
                _wait_for_port(int(port.group(1)), server, log, where)
                continue
            left = deadline - time.monotonic()
            try:
                done = subprocess.run(
                    ["bash", "-e", "-o", "pipefail", "-c", command.text],
                    cwd=cwd,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=max(left, 1.0),
                )
            except subprocess.TimeoutExpired:
                raise ExampleFailed(
                    f"{where}: `{command.text}` ran past the block's {timeout_s:.0f} s; "
                    "show a quicker form or mark it `not run` with the reason"
                ) from None
            if done.returncode != 0:
                raise ExampleFailed(
                    f"{where}: `{command.text}` exited {done.returncode}\n"
                    f"{_tail(done.stdout + done.stderr)}"
                )
    finally:
        for server in servers:
            _stop(server)


def run_python(block: Block, cwd: Path, env: dict[str, str], timeout_s: float) -> None:
    script = cwd / "example.py"
    script.write_text(block.text + "\n")
    python = REPO / ".venv" / "bin" / "python"
    try:
        done = subprocess.run(
            [str(python), script.name],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise ExampleFailed(f"{block.where}: the example ran past {timeout_s:.0f} s") from None
    if done.returncode != 0:
        lines = re.findall(r'example\.py", line (\d+)', done.stderr)
        where = block.doc_line(int(lines[-1])) if lines else block.where
        raise ExampleFailed(f"{where}: the example raised\n{_tail(done.stderr)}")


def run_block(block: Block, root: Path, timeout_s: float = BLOCK_TIMEOUT_S) -> None:
    """Run one example in a fresh folder under `root`; ExampleFailed names what broke."""
    if block.not_run is not None:
        raise ValueError(f"{block.where} is marked not run: {block.not_run}")
    cwd, env = workdir(root), environment()
    if block.lang in SHELLS:
        run_shell(block, cwd, env, timeout_s)
    elif block.lang == "python":
        run_python(block, cwd, env, timeout_s)
    else:
        raise ValueError(f"{block.where}: {block.lang!r} is no example language")
