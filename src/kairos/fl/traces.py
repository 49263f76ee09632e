"""Readers for FedScale-style device traces, as JSON or CSV (never pickles).

FedScale ships two traces as Python pickles; we read the same fields from safe formats:

- availability (`client_behave_trace`): per client, online windows `active[i]..inactive[i]`
  (seconds), and `finish_time`, the length of the recorded span (the replay period).
  JSON: `{"<client_id>": {"active": [...], "inactive": [...], "finish_time": T}, ...}`.
  CSV: one row per window, columns `client_id,active,inactive` and optionally `finish_time`.
- capacity (`client_device_capacity`): per client, `computation` (ms per sample; higher is
  slower) and `communication` (kbit/s). JSON `{"<id>": {"computation": x, "communication": y}}`
  or CSV `client_id,computation,communication`.

Every row is validated; the first bad one raises `TraceFormatError` naming the file, the line
and the field, because a silently skipped device changes the supply an experiment claims.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kairos.fl.availability import CheckIns, TraceAvailability
from kairos.workloads.trace import TraceFormatError


@dataclass(frozen=True)
class AvailabilityTrace:
    """Online windows of named clients; `device` indexes `client_ids`."""

    client_ids: tuple[str, ...]
    windows: CheckIns
    period: float

    def source(self, stretch_s: float = 0.0) -> TraceAvailability:
        return TraceAvailability(self.windows, self.period, len(self.client_ids), stretch_s)


@dataclass(frozen=True)
class CapacityTrace:
    client_ids: tuple[str, ...]
    computation: np.ndarray
    communication: np.ndarray

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        """(slowness, bandwidth) normalised by the population mean, as the Venn artifact does."""
        return self.computation / self.computation.mean(), (
            self.communication / self.communication.mean()
        )


def _num(
    path: Path, line: int, field: str, value: Any, positive: bool = False, who: str = ""
) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not math.isfinite(x) or x < 0 or (positive and x == 0):
        want = "a positive number" if positive else "a number >= 0"
        raise TraceFormatError(path, line, field, f"{who}expected {want}, got {value!r}")
    return x


def _json_line(text: str, key: str) -> int:
    """The line where a client's record starts (JSON parsers do not report positions)."""
    at = text.find(json.dumps(key))
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _load_json(path: Path) -> tuple[str, dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(path, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise TraceFormatError(path, 1, None, "expected an object keyed by client id")
    return text, data


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in columns if c not in header]
        if missing:
            raise TraceFormatError(
                path, 1, missing[0], f"missing column(s) {missing}; expected {list(columns)}"
            )
        out = []
        for row in reader:
            if all(not (v or "").strip() for v in row.values() if isinstance(v, str)):
                continue
            out.append((reader.line_num, {k.strip(): (v or "").strip() for k, v in row.items()}))
        return out


def _check_windows(path: Path, line: int, cid: str, act: list[float], ina: list[float]) -> None:
    for i, (a, b) in enumerate(zip(act, ina, strict=True)):
        if b < a:
            problem = f"client {cid!r}: window ends ({b}) before it starts ({a})"
            raise TraceFormatError(path, line, f"inactive[{i}]", problem)
        if i and a < ina[i - 1]:
            raise TraceFormatError(
                path, line, f"active[{i}]", f"client {cid!r}: window overlaps the previous one"
            )


def read_availability_trace(path: str | Path) -> AvailabilityTrace:
    """A FedScale-style availability trace from `.json` or `.csv` (chosen by the suffix)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"availability trace not found: {path}")
    per_client: dict[str, tuple[list[float], list[float]]] = {}
    period = 0.0
    if path.suffix.lower() == ".json":
        text, data = _load_json(path)
        for cid, rec in data.items():
            line = _json_line(text, cid)
            if not isinstance(rec, Mapping):
                raise TraceFormatError(path, line, None, f"client {cid!r}: expected an object")
            for key in ("active", "inactive"):
                if not isinstance(rec.get(key), list):
                    raise TraceFormatError(path, line, key, f"client {cid!r}: expected a list")
            who = f"client {cid!r}: "
            act, ina = (
                [_num(path, line, f"{key}[{i}]", v, who=who) for i, v in enumerate(rec[key])]
                for key in ("active", "inactive")
            )
            if len(act) != len(ina):
                raise TraceFormatError(
                    path, line, "inactive", f"client {cid!r}: {len(act)} starts, {len(ina)} ends"
                )
            _check_windows(path, line, str(cid), act, ina)
            if "finish_time" in rec:
                period = max(period, _num(path, line, "finish_time", rec["finish_time"], who=who))
            per_client[str(cid)] = (act, ina)
    else:
        for line, row in _rows(path, ("client_id", "active", "inactive")):
            cid = row["client_id"]
            if not cid:
                raise TraceFormatError(path, line, "client_id", "empty client id")
            a = _num(path, line, "active", row["active"])
            b = _num(path, line, "inactive", row["inactive"])
            act, ina = per_client.setdefault(cid, ([], []))
            if b < a:
                problem = f"client {cid!r}: window ends ({b}) before it starts ({a})"
                raise TraceFormatError(path, line, "inactive", problem)
            if ina and a < ina[-1]:
                problem = f"client {cid!r}: window overlaps the previous one (rows must be sorted)"
                raise TraceFormatError(path, line, "active", problem)
            act.append(a)
            ina.append(b)
            if row.get("finish_time"):
                period = max(period, _num(path, line, "finish_time", row["finish_time"]))
    if not per_client:
        raise TraceFormatError(path, 1, None, "the trace has no clients")
    ids = tuple(per_client)
    dev = np.concatenate([np.full(len(per_client[c][0]), i) for i, c in enumerate(ids)])
    start = np.concatenate([np.asarray(per_client[c][0], dtype=np.float64) for c in ids])
    end = np.concatenate([np.asarray(per_client[c][1], dtype=np.float64) for c in ids])
    period = max(period, float(end.max()) if end.size else 0.0)
    return AvailabilityTrace(ids, CheckIns.build(dev, start, end), period)


def read_capacity_trace(path: str | Path) -> CapacityTrace:
    """A FedScale-style capacity trace (`computation`, `communication` per client)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"capacity trace not found: {path}")
    ids: list[str] = []
    comp: list[float] = []
    comm: list[float] = []
    if path.suffix.lower() == ".json":
        text, data = _load_json(path)
        for cid, rec in data.items():
            line = _json_line(text, cid)
            if not isinstance(rec, Mapping):
                raise TraceFormatError(path, line, None, f"client {cid!r}: expected an object")
            for key, out in (("computation", comp), ("communication", comm)):
                if key not in rec:
                    raise TraceFormatError(path, line, key, f"client {cid!r}: missing field")
                out.append(_num(path, line, key, rec[key], True, f"client {cid!r}: "))
            ids.append(str(cid))
    else:
        for line, row in _rows(path, ("client_id", "computation", "communication")):
            ids.append(row["client_id"])
            comp.append(_num(path, line, "computation", row["computation"], positive=True))
            comm.append(_num(path, line, "communication", row["communication"], positive=True))
    if not ids:
        raise TraceFormatError(path, 1, None, "the trace has no clients")
    return CapacityTrace(tuple(ids), np.asarray(comp), np.asarray(comm))
