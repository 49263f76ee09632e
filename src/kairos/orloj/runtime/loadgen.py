"""The open-loop load generator: replay a recorded (arrival time, app, input) trace over HTTP.

As in the paper, inputs are drawn once and the sequence is recorded, then replayed in real time
against every system, so differences come from scheduling alone (spec 4, 6.2). Open loop: each
request is sent at its recorded time whatever happened to the earlier ones (a closed-loop
client would slow down exactly when the server falls behind and hide the overload). Arrivals
are bursty Poisson by default (`kairos.orloj.arrivals`), mixed over the model's applications.

Deadlines are end to end. Each request carries the client's send time (`sent_at_ms`, Unix
epoch ms), from which the server starts its deadline (loopback clocks agree), and the client
judges every answer on receipt: the headline `finish_rate` counts a request only if the server
answered 200 with outcome `ok` AND the client got that answer within the SLO of sending it.
`server_finish_rate` is the server's verdict alone (outcome `ok`); the two differ by the time
lost outside the server, which a busy client machine makes large (docs/orloj.md,
"End-to-end deadlines"). 429/503, other errors and transport failures count against
both like drops do. `stamp=False` sends no stamp: the server then times from its own arrival
stamp, the only view a server has of a client that does not say when it sent.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from kairos.orloj import arrivals
from kairos.orloj.runtime.models import ServedModel
from kairos.report.stats import percentile_summary


@dataclass(frozen=True)
class TraceItem:
    arrival_ms: float
    app: str
    input: dict[str, Any]
    slo_ms: float | None = None  # None: the replay's default SLO


def make_trace(
    model: ServedModel,
    apps: Mapping[str, Sequence[str]],
    rate_per_s: float,
    n: int,
    seed: int = 0,
    arrival: arrivals.ArrivalKind = "bursty",
    burst_sigma: float = 0.5,
) -> list[TraceItem]:
    """`n` requests at `rate_per_s` on average: apps with equal shares, each drawing one of its
    input classes uniformly."""
    if rate_per_s <= 0 or n < 1:
        raise ValueError("need rate_per_s > 0 and n >= 1")
    rng = np.random.default_rng(seed)
    times = arrivals.generate(arrival, n, rate_per_s / 1e3, rng, sigma=burst_sigma)
    names = sorted(apps)
    items = []
    for t in times:
        app = names[int(rng.integers(len(names)))]
        cls = apps[app][int(rng.integers(len(apps[app])))]
        items.append(TraceItem(float(t), app, model.random_input(cls, rng)))
    return items


def save_trace(items: Sequence[TraceItem], path: str | Path) -> Path:
    """JSON lines, one request each: {arrival_ms, app, input, slo_ms}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(asdict(i)) + "\n" for i in items))
    return path


def load_trace(path: str | Path) -> list[TraceItem]:
    items = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            slo = None if d.get("slo_ms") is None else float(d["slo_ms"])
            items.append(TraceItem(float(d["arrival_ms"]), str(d["app"]), dict(d["input"]), slo))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a trace record ({exc})") from None
    items.sort(key=lambda i: i.arrival_ms)
    return items


class ServerUnreachable(RuntimeError):
    """No server answers at the URL: the run would only measure connection errors."""


def trace_rate_per_s(items: Sequence[TraceItem]) -> float:
    """A recorded trace's mean arrival rate (requests per second over its span)."""
    if len(items) < 2:
        return float("nan")
    span_ms = items[-1].arrival_ms - items[0].arrival_ms
    return (len(items) - 1) / span_ms * 1e3 if span_ms > 0 else float("inf")


@dataclass(frozen=True)
class Reply:
    app: str
    status: int  # HTTP status; 0 for a transport failure
    outcome: str  # ok | late | timed_out | http_<status> | error
    latency_ms: float  # as seen by the client
    server_latency_ms: float | None
    batch_size: int
    send_lag_ms: float  # how late the client sent it (event-loop lag)
    on_time: bool = False  # the client's verdict: 200, outcome ok, answered within the SLO
    transit_ms: float = 0.0  # the server's reckoning of the time before it saw the request


@dataclass
class LoadReport:
    replies: list[Reply]
    duration_s: float

    @property
    def all_failed_in_transport(self) -> bool:
        """Every request failed before any HTTP answer (the server went away mid-run)."""
        return bool(self.replies) and all(r.status == 0 for r in self.replies)

    def summary(self) -> dict[str, Any]:
        n = len(self.replies)
        outcomes = Counter(r.outcome for r in self.replies)
        on_time = sum(r.on_time for r in self.replies)
        by_app: dict[str, list[bool]] = {}
        server_by_app: dict[str, list[bool]] = {}
        for r in self.replies:
            by_app.setdefault(r.app, []).append(r.on_time)
            server_by_app.setdefault(r.app, []).append(r.outcome == "ok")
        ok_lat = percentile_summary([r.latency_ms for r in self.replies if r.on_time])
        transit = percentile_summary([r.transit_ms for r in self.replies], (50, 99), empty=0.0)
        lag = percentile_summary([r.send_lag_ms for r in self.replies], (99,), empty=0.0)
        sizes = [r.batch_size for r in self.replies if r.batch_size > 0]
        return {
            "requests": n,
            "finish_rate": on_time / n if n else float("nan"),  # the client's: the headline
            "server_finish_rate": outcomes["ok"] / n if n else float("nan"),
            "ok_but_late_at_client": outcomes["ok"] - on_time,
            "outcomes": dict(sorted(outcomes.items())),
            "finish_rate_by_app": {a: float(np.mean(v)) for a, v in sorted(by_app.items())},
            "server_finish_rate_by_app": {
                a: float(np.mean(v)) for a, v in sorted(server_by_app.items())
            },
            "goodput_rps": on_time / self.duration_s if self.duration_s > 0 else 0.0,
            "transit_p50_ms": transit["p50"],
            "transit_p99_ms": transit["p99"],
            "latency_ok_p50_ms": ok_lat["p50"],
            "latency_ok_p99_ms": ok_lat["p99"],
            "mean_batch_size": float(np.mean(sizes)) if sizes else 0.0,
            "send_lag_p99_ms": lag["p99"],
            "duration_s": self.duration_s,
        }


async def _send(
    client: httpx.AsyncClient, item: TraceItem, slo_ms: float, lag_ms: float, stamp: bool
) -> Reply:
    """One request, judged by the client on receipt against the SLO from its own send time."""
    slo = item.slo_ms or slo_ms
    body: dict[str, Any] = {"app": item.app, "slo_ms": slo, "input": item.input}
    if stamp:
        body["sent_at_ms"] = time.time() * 1e3
    t0 = time.perf_counter()
    try:
        resp = await client.post("/v1/infer", json=body)
    except httpx.HTTPError:
        return Reply(item.app, 0, "error", (time.perf_counter() - t0) * 1e3, None, 0, lag_ms)
    latency = (time.perf_counter() - t0) * 1e3
    if resp.status_code != 200:
        return Reply(item.app, resp.status_code, f"http_{resp.status_code}", latency, None, 0,
                     lag_ms)  # fmt: skip
    d = resp.json()
    outcome = str(d["outcome"])
    return Reply(item.app, 200, outcome, latency, float(d["server_latency_ms"]),
                 int(d["batch_size"]), lag_ms, on_time=outcome == "ok" and latency <= slo,
                 transit_ms=float(d.get("transit_ms", 0.0)))  # fmt: skip


async def replay(
    url: str,
    items: Sequence[TraceItem],
    slo_ms: float,
    api_key: str | None = None,
    timeout_s: float = 60.0,
    progress: Callable[[int, int], None] | None = None,
    stamp: bool = True,
) -> LoadReport:
    """Send every item at its recorded time (relative to the first), wait for all answers;
    `progress(answered, total)` is called as each answer comes back; `stamp` sends the send
    time (the server's deadline starts there). Raises `ServerUnreachable` if nothing answers
    `/health` at `url` before the run."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=timeout_s, limits=limits
    ) as client:
        try:
            await client.get("/health")  # any HTTP answer will do (503 while restarting)
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"cannot reach the server at {url} ({exc!r})") from None
        tasks: list[asyncio.Task[Any]] = []
        total = len(items)
        answered = itertools.count(1)  # answers so far, counted as each one lands
        first = items[0].arrival_ms if items else 0.0
        start = time.perf_counter()
        for item in items:
            due = (item.arrival_ms - first) / 1e3
            delay = due - (time.perf_counter() - start)
            if delay > 0:
                await asyncio.sleep(delay)
            lag = max(0.0, (time.perf_counter() - start - due) * 1e3)
            task = asyncio.create_task(_send(client, item, slo_ms, lag, stamp))
            if progress is not None:
                task.add_done_callback(lambda _t: progress(next(answered), total))
            tasks.append(task)
        replies = list(await asyncio.gather(*tasks))
        duration = time.perf_counter() - start
    return LoadReport(replies, duration)


def run_load(
    url: str,
    items: Sequence[TraceItem],
    slo_ms: float,
    api_key: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    stamp: bool = True,
) -> LoadReport:
    """`replay` from synchronous code (its own event loop)."""
    return asyncio.run(replay(url, items, slo_ms, api_key, progress=progress, stamp=stamp))
