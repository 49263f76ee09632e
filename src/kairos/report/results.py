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


def git_revision(cwd: str | Path | None = None) -> str:
    """The checkout's commit (with `-dirty` when there are uncommitted changes), or `unknown`."""
    where = Path(cwd) if cwd else Path(kairos.__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5
        )
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


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
