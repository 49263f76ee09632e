"""`kairos --help` and a system's `--help` load none of the heavy libraries: every `kairos`
call pays for what the CLI imports at start-up (scipy.optimize and matplotlib alone took 8 s of
a 10 s start on a loaded two-core machine)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "matplotlib", "torch", "ray", "flwr", "sklearn", "pandas")

PROBE = f"""
import json, sys
from typer.testing import CliRunner
from kairos.cli import app
codes = [CliRunner().invoke(app, args).exit_code for args in (["--help"], ["andes", "--help"],
         ["venn", "--help"], ["report", "--help"])]
print(json.dumps({{"codes": codes, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def _probe(prelude: str = "") -> dict[str, list[object]]:
    out = subprocess.run(
        [sys.executable, "-c", prelude + PROBE], capture_output=True, text=True, check=True
    )
    result: dict[str, list[object]] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_help_loads_no_heavy_library() -> None:
    assert _probe() == {"codes": [0, 0, 0, 0], "loaded": []}


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: a CLI that imported scipy.optimize at start-up is caught."""
    assert _probe("import scipy.optimize\n")["loaded"] == ["scipy"]
