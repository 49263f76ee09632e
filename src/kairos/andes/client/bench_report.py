"""Per-request records of a benchmark run and the report built from them.

Metric names follow `vllm bench serve` (`mean_ttft_ms`, `median_tpot_ms`, `p99_itl_ms`,
`request_goodput`, ...) plus the Andes QoE. Per-request values come from the shared helpers
(`kairos.andes.metrics.stream_metrics`, `kairos.andes.qoe.qoe_at`) over the token timeline
measured from the moment the request was sent:

- a chunk carrying `n` tokens contributes `n` tokens at its arrival time (nothing is spread);
  by default every content chunk counts as one token, see `bench.py` for when it is more;
- TTFT = first content chunk; TPOT = (last - first) / (tokens - 1), tokens counted on the
  timeline (vLLM divides by the server's usage count and ends at the stream's end, the same
  whenever every chunk is one token and [DONE] follows the last one); E2EL = last content chunk;
- ITL = gaps between consecutive content chunks (as vLLM, one gap per chunk, not per token);
- QoE with the request's own TTFT target and speed; TDS = (tokens - 1) / (last - first).

Aggregates cover completed requests, as vLLM's do; failed ones are counted, and `avg_qoe_all`
also scores them as QoE 0 (a user who got no answer). Goodput counts completed requests whose
every given SLO holds (metric <= SLO, TPOT of a one-token answer taken as 0, as vLLM).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kairos.andes.metrics import stream_metrics
from kairos.andes.qoe import qoe_at
from kairos.report.stats import percentile_summary

GOODPUT_KEYS = ("ttft", "tpot", "e2el")


@dataclass
class RequestRecord:
    """One request as sent and as received; times are seconds, chunk times relative to send."""

    index: int
    scheduled_s: float  # arrival offset in the workload
    prompt_tokens: int  # target prompt length (the server may count differently)
    max_tokens: int
    ttft_target_s: float
    tokens_per_s: float
    send_s: float = math.nan  # when it was actually sent, relative to the start of the run
    status_code: int | None = None
    error: str | None = None
    finish_reason: str | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None
    # filled by `score`
    ttft_s: float = math.nan
    tpot_s: float = math.nan
    e2el_s: float = math.nan
    tds: float = math.nan
    qoe: float = math.nan

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def output_tokens(self) -> int:
        """Generated tokens: the server's usage count when reported, else the timeline's."""
        if self.usage_completion_tokens is not None:
            return self.usage_completion_tokens
        return int(sum(self.chunk_tokens))

    def token_times(self) -> np.ndarray:
        return np.repeat(np.asarray(self.chunk_times, dtype=np.float64), self.chunk_tokens)

    def itl(self) -> list[float]:
        return np.diff(np.asarray(self.chunk_times, dtype=np.float64)).tolist()

    def score(self) -> RequestRecord:
        """Fill TTFT, TPOT, E2EL, TDS and QoE from the chunk timeline (arrival = send = 0)."""
        times = self.token_times()
        m = stream_metrics(times, 0.0)
        self.ttft_s, self.tpot_s, self.e2el_s, self.tds = m.ttft, m.tpot, m.e2el, m.tds
        ok = self.ok
        self.qoe = qoe_at(times, 0.0, self.ttft_target_s, self.tokens_per_s) if ok else math.nan
        return self

    def row(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        out["output_tokens"] = self.output_tokens
        return out


def parse_goodput(items: Iterable[str] | None) -> dict[str, float]:
    """`["ttft:500", "tpot:50"]` (or one `"ttft:500,tpot:50"`) -> SLOs in milliseconds."""
    out: dict[str, float] = {}
    for item in items or []:
        for part in item.replace(",", " ").split():
            key, sep, raw = part.partition(":")
            key = key.strip().lower()
            if not sep or key not in GOODPUT_KEYS:
                raise ValueError(
                    f"--goodput takes KEY:MILLISECONDS with KEY in {list(GOODPUT_KEYS)}, "
                    f"got {part!r}"
                )
            try:
                value = float(raw)
            except ValueError:
                value = math.nan
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"--goodput {key} must be a positive number of ms, got {raw!r}")
            out[key] = value
    return out


def _stats(name: str, values: Sequence[float], scale: float, unit: str) -> dict[str, float]:
    """`vllm bench serve`'s columns (mean, median, std, p99) from the shared summary."""
    s = percentile_summary(np.asarray(values, dtype=np.float64) * scale, (50, 99))
    names = {"mean": "mean", "median": "p50", "std": "std", "p99": "p99"}
    return {f"{k}_{name}{unit}": s[v] for k, v in names.items()}


def _good(r: RequestRecord, slo_ms: Mapping[str, float]) -> bool:
    tpot = r.tpot_s if math.isfinite(r.tpot_s) else 0.0
    value = {"ttft": r.ttft_s, "tpot": tpot, "e2el": r.e2el_s}
    return all(value[k] * 1e3 <= slo for k, slo in slo_ms.items())


def aggregate(
    records: Sequence[RequestRecord], duration_s: float, goodput_ms: Mapping[str, float] | None
) -> dict[str, Any]:
    """The run's summary (vLLM's names plus QoE); `records` must already be scored."""
    done = [r for r in records if r.ok]
    dur = duration_s if duration_s > 0 else math.nan
    out_tokens = sum(r.output_tokens for r in done)
    in_tokens = sum(
        r.usage_prompt_tokens if r.usage_prompt_tokens is not None else r.prompt_tokens
        for r in done
    )
    qoe = np.array([r.qoe for r in done], dtype=np.float64)
    summary: dict[str, Any] = {
        "requests": len(records),
        "completed": len(done),
        "failed": len(records) - len(done),
        "duration_s": duration_s,
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "request_throughput": len(done) / dur,
        "output_throughput": out_tokens / dur,
        "total_token_throughput": (in_tokens + out_tokens) / dur,
    }
    if goodput_ms:
        summary["request_goodput"] = sum(_good(r, goodput_ms) for r in done) / dur
        summary["goodput_slos_ms"] = dict(goodput_ms)
    summary["avg_qoe"] = float(qoe.mean()) if qoe.size else math.nan
    summary["share_qoe_095"] = float((qoe >= 0.95).mean()) if qoe.size else math.nan
    summary["avg_qoe_all"] = float(qoe.sum() / len(records)) if records else math.nan
    summary.update(_stats("qoe", qoe.tolist(), 1.0, ""))
    summary.update(_stats("ttft", [r.ttft_s for r in done], 1e3, "_ms"))
    summary.update(_stats("tpot", [r.tpot_s for r in done], 1e3, "_ms"))
    summary.update(_stats("itl", [g for r in done for g in r.itl()], 1e3, "_ms"))
    summary.update(_stats("e2el", [r.e2el_s for r in done], 1e3, "_ms"))
    summary.update(_stats("tds", [r.tds for r in done], 1.0, ""))
    lags = [r.send_s - r.scheduled_s for r in records if math.isfinite(r.send_s)]
    summary["max_send_lag_s"] = float(max(lags)) if lags else math.nan
    errors: dict[str, int] = {}
    for r in records:
        if r.error is not None:
            kind = r.error.split(":")[0]
            errors[kind] = errors.get(kind, 0) + 1
    summary["errors"] = errors
    return summary


TABLE_KEYS = (
    ("completed", "Successful requests"),
    ("failed", "Failed requests"),
    ("duration_s", "Benchmark duration (s)"),
    ("total_output_tokens", "Total generated tokens"),
    ("request_throughput", "Request throughput (req/s)"),
    ("request_goodput", "Request goodput (req/s)"),
    ("output_throughput", "Output token throughput (tok/s)"),
    ("avg_qoe", "Average QoE"),
    ("share_qoe_095", "Share with QoE >= 0.95"),
    ("mean_ttft_ms", "Mean TTFT (ms)"),
    ("median_ttft_ms", "Median TTFT (ms)"),
    ("p99_ttft_ms", "P99 TTFT (ms)"),
    ("mean_tpot_ms", "Mean TPOT (ms)"),
    ("median_tpot_ms", "Median TPOT (ms)"),
    ("p99_tpot_ms", "P99 TPOT (ms)"),
    ("mean_itl_ms", "Mean ITL (ms)"),
    ("median_itl_ms", "Median ITL (ms)"),
    ("p99_itl_ms", "P99 ITL (ms)"),
    ("mean_e2el_ms", "Mean E2EL (ms)"),
    ("median_e2el_ms", "Median E2EL (ms)"),
    ("p99_e2el_ms", "P99 E2EL (ms)"),
    ("mean_tds", "Mean TDS (tok/s)"),
    ("max_send_lag_s", "Max client send lag (s)"),
)


def table_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Two-column rows (metric, value) in vLLM's order, for `kairos.report.print_table`."""
    return [{"metric": label, "value": summary[k]} for k, label in TABLE_KEYS if k in summary]


def save_plots(records: Sequence[RequestRecord], out_dir: Path, name: str) -> list[Path]:
    """QoE and TTFT CDFs of the completed requests (nothing when none completed)."""
    from kairos.report import save_cdf_plot

    done = [r for r in records if r.ok]
    if not done:
        return []
    qoe = save_cdf_plot(
        out_dir / f"{name}_qoe_cdf.png", {"bench": [r.qoe for r in done]}, xlabel="QoE"
    )
    ttft = [r.ttft_s for r in done if math.isfinite(r.ttft_s)]
    paths = [qoe]
    if ttft:
        paths.append(
            save_cdf_plot(out_dir / f"{name}_ttft_cdf.png", {"bench": ttft}, xlabel="TTFT (s)")
        )
    return paths
