"""Request traces: arrival times with prompt and output lengths, and their file formats.

Readers validate every row and report the first bad one by file, line and column, because a
silently skipped row changes the load an experiment claims to have run.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

AZURE_COLUMNS = ("arrived_at", "num_prefill_tokens", "num_decode_tokens")
BURSTGPT_COLUMNS = (
    "Timestamp",
    "Model",
    "Request tokens",
    "Response tokens",
    "Total tokens",
    "Log Type",
)


class TraceFormatError(ValueError):
    """A trace file that does not match its format; names the file, line and column."""

    def __init__(self, path: str | Path, line: int, column: str | None, problem: str) -> None:
        where = f"{path}, line {line}" + (f", column '{column}'" if column else "")
        super().__init__(f"{where}: {problem}")
        self.path = str(path)
        self.line = line
        self.column = column


@dataclass(frozen=True)
class Trace:
    """A workload: sorted arrival times (s) and per-request prompt and output token counts."""

    arrivals: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = "synthetic"
    meta: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.arrivals)
        if len(self.prompt_tokens) != n or len(self.output_tokens) != n:
            raise ValueError("arrivals, prompt_tokens and output_tokens must have equal length")
        if n and np.any(np.diff(self.arrivals) < 0):
            raise ValueError("trace arrivals must be sorted")

    def __len__(self) -> int:
        return len(self.arrivals)

    @property
    def duration(self) -> float:
        return float(self.arrivals[-1] - self.arrivals[0]) if len(self) > 1 else 0.0

    @property
    def mean_rate(self) -> float:
        """Requests per second over the span of the trace."""
        return len(self) / self.duration if self.duration > 0 else float("nan")

    def scaled(self, time_scale: float) -> Trace:
        """Stretch time by `time_scale` (2.0 halves the rate), keeping lengths."""
        if not time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale}")
        t0 = self.arrivals[0] if len(self) else 0.0
        return self._replace(arrivals=(self.arrivals - t0) * time_scale)

    def with_rate(self, rate: float) -> Trace:
        """Rescale time so the mean arrival rate is `rate` requests/s."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        return self.scaled(self.mean_rate / rate)

    def window(self, start: float, end: float) -> Trace:
        """Requests arriving in [start, end), re-based so the window starts at 0."""
        keep = (self.arrivals >= start) & (self.arrivals < end)
        return self._replace(
            arrivals=self.arrivals[keep] - start,
            prompt_tokens=self.prompt_tokens[keep],
            output_tokens=self.output_tokens[keep],
        )

    def head(self, n: int) -> Trace:
        return self._replace(
            arrivals=self.arrivals[:n],
            prompt_tokens=self.prompt_tokens[:n],
            output_tokens=self.output_tokens[:n],
        )

    def _replace(self, **kw: np.ndarray) -> Trace:
        return Trace(
            arrivals=kw.get("arrivals", self.arrivals),
            prompt_tokens=kw.get("prompt_tokens", self.prompt_tokens),
            output_tokens=kw.get("output_tokens", self.output_tokens),
            source=self.source,
            meta=dict(self.meta),
        )

    @staticmethod
    def from_columns(
        arrivals: Iterable[float],
        prompt_tokens: Iterable[float],
        output_tokens: Iterable[float],
        source: str = "synthetic",
    ) -> Trace:
        a = np.asarray(list(arrivals), dtype=np.float64)
        p = np.asarray(list(prompt_tokens), dtype=np.int64)
        o = np.asarray(list(output_tokens), dtype=np.int64)
        order = np.argsort(a, kind="stable")
        return Trace(a[order], p[order], o[order], source=source)


def _number(kind: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value < 0:
            raise ValueError
        if kind == "int" and value != int(value):
            raise ValueError
        return value

    return parse


def _read_rows(
    path: str | Path,
    columns: tuple[str, ...],
    numeric: dict[str, str],
) -> dict[str, list[float]]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"trace file not found: {path}")
    out: dict[str, list[float]] = {c: [] for c in numeric}
    parsers = {c: _number(k) for c, k in numeric.items()}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise TraceFormatError(path, 1, None, "file is empty; expected a CSV header") from None
        header = [h.strip() for h in header]
        missing = [c for c in columns if c not in header]
        if missing:
            raise TraceFormatError(
                path, 1, missing[0], f"missing column(s) {missing}; expected {list(columns)}"
            )
        index = {c: header.index(c) for c in numeric}
        for row in reader:
            line = reader.line_num
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise TraceFormatError(
                    path, line, None, f"expected {len(header)} fields, found {len(row)}"
                )
            for col, i in index.items():
                cell = row[i].strip()
                try:
                    out[col].append(parsers[col](cell))
                except ValueError:
                    want = "integer" if numeric[col] == "int" else "number"
                    problem = f"expected a non-negative {want}, got {cell!r}"
                    raise TraceFormatError(path, line, col, problem) from None
    return out


def read_azure_csv(path: str | Path) -> Trace:
    """The Azure LLM inference / Splitwise CSV.

    Columns `arrived_at,num_prefill_tokens,num_decode_tokens` (seconds, tokens, tokens).
    """
    cols = _read_rows(
        path,
        AZURE_COLUMNS,
        {"arrived_at": "float", "num_prefill_tokens": "int", "num_decode_tokens": "int"},
    )
    trace = Trace.from_columns(
        cols["arrived_at"], cols["num_prefill_tokens"], cols["num_decode_tokens"], source=str(path)
    )
    trace.meta["format"] = "azure"
    return trace


def read_burstgpt_csv(
    path: str | Path, model: str | None = None, log_type: str | None = None
) -> Trace:
    """The BurstGPT format; optionally keep only one `Model` and/or `Log Type`."""
    path = Path(path)
    numeric = {"Timestamp": "float", "Request tokens": "int", "Response tokens": "int"}
    cols = _read_rows(path, BURSTGPT_COLUMNS, numeric)
    keep = np.ones(len(cols["Timestamp"]), dtype=bool)
    if model is not None or log_type is not None:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(fh) if any(v.strip() for v in r.values() if v)]
        if model is not None:
            keep &= np.array([r["Model"].strip() == model for r in rows])
        if log_type is not None:
            keep &= np.array([r["Log Type"].strip() == log_type for r in rows])
    a = np.asarray(cols["Timestamp"])[keep]
    trace = Trace.from_columns(
        a - (a.min() if a.size else 0.0),
        np.asarray(cols["Request tokens"])[keep],
        np.asarray(cols["Response tokens"])[keep],
        source=str(path),
    )
    trace.meta["format"] = "burstgpt"
    return trace


def read_trace(path: str | Path) -> Trace:
    """Read a trace, recognising its format from the CSV header."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"trace file not found: {path}")
    with path.open(newline="", encoding="utf-8") as fh:
        header = [h.strip() for h in next(csv.reader(fh), [])]
    if all(c in header for c in AZURE_COLUMNS):
        return read_azure_csv(path)
    if all(c in header for c in BURSTGPT_COLUMNS):
        return read_burstgpt_csv(path)
    raise TraceFormatError(
        path,
        1,
        None,
        f"unknown trace format; expected the Azure columns {list(AZURE_COLUMNS)} "
        f"or the BurstGPT columns {list(BURSTGPT_COLUMNS)}",
    )
