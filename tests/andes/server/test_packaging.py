"""The wheel ships every file the package needs at run time, not only its Python modules.

The chat page (`kairos/andes/server/static/`) is served from the installed package; a wheel
without it serves no page at all. This builds the wheel from the source tree (setuptools'
PEP 517 backend, in a subprocess, offline) and compares it with the files on disk.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src" / "kairos"

BUILD = """
import sys
from setuptools import build_meta
print(build_meta.build_wheel(sys.argv[1]))
"""


def _data_files() -> set[str]:
    """Every file of the package that is not Python source or a cache, relative to src/."""
    return {
        p.relative_to(SRC.parent).as_posix()
        for p in SRC.rglob("*")
        if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
    }


def test_the_wheel_contains_every_data_file_of_the_package(tmp_path: Path) -> None:
    data = _data_files()
    static = {f for f in data if f.startswith("kairos/andes/server/static/")}
    assert {f"kairos/andes/server/static/{n}" for n in ("index.html", "chat.js", "pacer.js")} <= (
        static
    )
    assert "kairos/py.typed" in data
    # build from a copy, so the checkout gets no build/ or egg-info folders
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(SRC, tree / "src" / "kairos", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "dist"
    out.mkdir()
    built = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = out / built.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = data - names
        assert not missing, f"not in the wheel (see package-data in pyproject.toml): {missing}"
        for name in static:  # shipped as they are
            assert zf.read(name) == (SRC.parent / name).read_bytes(), name
    assert "kairos/andes/server/app.py" in names
