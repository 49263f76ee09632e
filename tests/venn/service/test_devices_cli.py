"""`kairos venn devices` without jobs says what its devices do: a summary every `--every`
seconds and one when stopped (Ctrl-C), never just its first line."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import typer
from typer.testing import CliRunner

from kairos.cli import system_group
from kairos.runtime.http import BackgroundServer
from kairos.venn.service.app import create_app
from kairos.venn.service.cli import register

SUMMARY = re.compile(r"(\d+) s: (\d+) check-ins, (\d+) assigned, (\d+) results counted")
WAIT_S = 120.0  # a loaded two-core machine starts the CLI (torch imports) in up to a minute


def test_devices_alone_print_a_summary_periodically_and_on_ctrl_c(tmp_path: Path) -> None:
    with BackgroundServer(create_app(db=tmp_path / "venn.sqlite")) as srv:
        cmd = [sys.executable, "-m", "kairos", "venn", "devices", "--url", srv.url,
               "--n", "30", "--every", "0.5", "--mean-gap-s", "0.2", "--day-s", "5"]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + WAIT_S
            checkins = 0
            while checkins == 0 and time.monotonic() < deadline:
                time.sleep(0.5)
                text = httpx.get(srv.url + "/metrics").text
                found = re.search(r"^kairos_venn_checkins_total (\S+)$", text, re.M)
                checkins = int(float(found.group(1))) if found else 0
            assert checkins > 0, "no device checked in"
            time.sleep(1.5)  # at least two heartbeats
        finally:
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    lines = [m for m in map(SUMMARY.search, out.splitlines()) if m]
    assert len(lines) >= 2, out  # heartbeats and the last summary
    last = lines[-1]
    assert int(last.group(2)) > 0, out  # the final count saw the check-ins


def test_devices_name_an_impossible_option_before_any_device_starts() -> None:
    group = system_group("venn")
    register(group)
    app = typer.Typer()
    app.add_typer(group, name="venn")
    runner = CliRunner()
    for option in ("--n", "--max-connections"):
        bad = runner.invoke(app, ["venn", "devices", option, "0"])
        assert bad.exit_code == 2 and f"{option} must be >= 1, got 0" in bad.output, bad.output
