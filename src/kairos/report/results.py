"""Result files: every number we publish carries the config, seed and code that produced it.

A result is written twice: JSON (provenance, config, summary and rows) for machines, and CSV
(the rows) for spreadsheets and pandas.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import kairos


class Provenance(BaseModel):
    package_version: str
    git_revision: str
    machine: str
    python: str
    cpu_count: int
    created_at: str


def git_dir(start: str | Path) -> Path | None:
    """The git directory of the checkout holding `start` (a `.git` folder, or the folder a
    `.git` file points to in a worktree or submodule), or None outside any checkout."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = dot.read_text(errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                return target if target.is_absolute() else (folder / target).resolve()
    return None


def _head_from_files(gdir: Path) -> str | None:
    """HEAD's commit read from the git directory itself (no git program needed)."""
    common = gdir
    if (gdir / "commondir").is_file():  # a worktree: refs live in the main git directory
        common = (gdir / (gdir / "commondir").read_text().strip()).resolve()
    try:
        head = (gdir / "HEAD").read_text().strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head if _is_hex(head) else None
    ref = head.removeprefix("ref:").strip()
    for base in (gdir, common):
        loose = base / ref
        if loose.is_file():
            sha = loose.read_text().strip()
            return sha if _is_hex(sha) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref and _is_hex(parts[0]):
                return parts[0]
    return None  # a branch with no commit yet, or unreadable


def _is_hex(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def git_revision(cwd: str | Path | None = None) -> str:
    """The commit of the checkout holding `cwd` (default: this package's source), with
    `-dirty` when tracked files have uncommitted changes.

    `unknown` only outside a git checkout: an installed package (also one installed into a
    virtual environment that happens to sit inside some repository, which does not track it).
    Inside one, the commit comes from `git`, or, when `git` is missing or refuses the
    repository (another user's checkout), from the git directory's files (then without the
    dirty mark, which needs `git`); `uncommitted` before the first commit.
    """
    where = Path(cwd) if cwd else Path(kairos.__file__).resolve().parent
    gdir = git_dir(where)
    if gdir is None:
        return "unknown"

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, timeout=5)

    try:
        rev = git("rev-parse", "HEAD")
        sha = rev.stdout.strip()
        if rev.returncode == 0 and _is_hex(sha):
            if cwd is None and git("ls-files", "--error-unmatch", "--", "__init__.py").returncode:
                return "unknown"  # a repository around an installed copy, not its source
            dirty = git("status", "--porcelain", "--untracked-files=no")
            return sha + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return _head_from_files(gdir) or "uncommitted"


def provenance() -> Provenance:
    return Provenance(
        package_version=kairos.__version__,
        git_revision=git_revision(),
        machine=f"{platform.node()} {platform.machine()} {platform.processor() or ''}".strip(),
        python=platform.python_version(),
        cpu_count=os.cpu_count() or 1,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


class ResultFile(BaseModel):
    name: str
    config: dict[str, Any]
    seed: int | None
    provenance: Provenance
    summary: dict[str, Any]
    rows: list[dict[str, Any]]


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def write_result(
    out_dir: str | Path,
    name: str,
    *,
    config: BaseModel | Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> tuple[Path, Path]:
    """Write `<name>.json` and `<name>.csv` into `out_dir`; returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = ResultFile(
        name=name,
        config=_jsonable(config),
        seed=seed,
        provenance=provenance(),
        summary=_jsonable(dict(summary or {})),
        rows=[_jsonable(dict(r)) for r in rows],
    )
    json_path = out / f"{name}.json"
    json_path.write_text(result.model_dump_json(indent=2))
    csv_path = out / f"{name}.csv"
    columns: list[str] = []
    for row in result.rows:
        columns.extend(k for k in row if k not in columns)
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in result.rows:
            writer.writerow(
                {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in row.items()}
            )
    return json_path, csv_path
