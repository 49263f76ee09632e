"""The kairos servers the adversarial suite attacks, each on a real socket with small limits.

A `Target` knows how to make one normal request (which must succeed after every case), which
JSON endpoints take bodies (with a valid body and the schema the server validates it with, for
generated bodies), and which of its own counters must read zero once it is idle: requests
waiting or running, KV blocks held, jobs nobody asked for, devices over-assigned. A later
server joins the suite by adding one builder here.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from kairos.runtime.http import BackgroundServer

KEY = "sk-adversarial"
AUTH = {"Authorization": f"Bearer {KEY}"}
MAX_BODY = 8 * 1024
BODY_TIMEOUT_S = 2.0
MAX_WAITING = 8  # the queue bound floods push past


@dataclass
class Endpoint:
    path: str
    valid: Callable[[], dict[str, Any]]
    schema: type[BaseModel]


@dataclass
class Target:
    name: str
    server: BackgroundServer
    endpoints: list[Endpoint]
    normal: Callable[[httpx.Client], None]
    leaks: Callable[[], dict[str, int]]  # every value must be 0 once the server is idle
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=AUTH, timeout=timeout)

    def settle(self, timeout_s: float = 30.0) -> dict[str, int]:
        """The leak counters once they reach zero, or as they stand after `timeout_s` (work a
        case left behind may still be draining: aborts and timeouts take a moment)."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = self.leaks()
            if not any(got.values()) or time.monotonic() > deadline:
                return got
            time.sleep(0.05)

    def assert_healthy(self) -> None:
        """A normal request is served, `/health` is ok and nothing is left over."""
        with self.client() as c:
            self.normal(c)
            assert c.get("/health").status_code == 200
        leaked = self.settle()
        assert not any(leaked.values()), (self.name, leaked)


# -- Andes -------------------------------------------------------------------------------
@contextmanager
def andes(tmp: Path) -> Iterator[Target]:
    from kairos.andes.engine.async_engine import AsyncEngine
    from kairos.andes.server.app import create_app
    from kairos.andes.server.protocol import ChatCompletionRequest
    from kairos.andes.server.settings import ServerSettings
    from tests.andes.e2e.conftest import engine

    eng = engine(blocks=128)
    settings = ServerSettings(
        api_key=KEY,
        max_body_bytes=MAX_BODY,
        body_timeout_s=BODY_TIMEOUT_S,
        max_waiting=MAX_WAITING,
        max_prompt_tokens=256,
        log_level="critical",
    )
    app = create_app(AsyncEngine(eng), settings)

    def valid() -> dict[str, Any]:
        return {
            "model": "kairos-tiny-llama-random",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 4,
        }

    def normal(c: httpx.Client) -> None:
        r = c.post("/v1/chat/completions", json={**valid(), "ignore_eos": True})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] == 4

    def leaks() -> dict[str, int]:
        s = eng.stats()
        counters = app.state.counters
        return {
            "running": s.running,
            "waiting": s.waiting,
            "swapped": s.swapped,
            "kv_blocks_held": s.num_gpu_blocks - s.free_gpu_blocks,
            "pending": counters.pending,
            "in_flight": counters.in_flight,
        }

    chat = Endpoint("/v1/chat/completions", valid, ChatCompletionRequest)
    with BackgroundServer(app) as srv:
        yield Target("andes", srv, [chat], normal, leaks)


# -- Orloj -------------------------------------------------------------------------------
@contextmanager
def orloj(tmp: Path) -> Iterator[Target]:
    from kairos.orloj.runtime.calibrate import CalibrationConfig
    from kairos.orloj.runtime.dispatcher import Dispatcher
    from kairos.orloj.runtime.executor import ThreadExecutor
    from kairos.orloj.runtime.models import EarlyExitCNN
    from kairos.orloj.runtime.server import InferRequest, RuntimeSettings, create_app
    from kairos.orloj.speed import served_options
    from kairos.orloj.systems import make_system

    sizes = (1, 2)
    apps = {"easy": ("exit1",), "hard": ("exit4",)}
    model = EarlyExitCNN(stage_blocks=(1, 1, 1, 1))
    worker = ThreadExecutor(model, warm_sizes=sizes)
    cal = worker.calibrate(CalibrationConfig(batch_sizes=sizes, solo_runs=3, batch_reps=1))
    policy = make_system(
        "orloj",
        model=cal.batch_model,
        slo_ms=200.0,
        sizes=sizes,
        options=served_options("orloj", {}),
    )
    d = Dispatcher(policy, model, worker, offline=cal.app_profile(apps, 200), max_open=MAX_WAITING)
    settings = RuntimeSettings(
        api_key=KEY,
        max_body_bytes=MAX_BODY,
        body_timeout_s=BODY_TIMEOUT_S,
        max_open=MAX_WAITING,
        log_level="critical",
    )

    def valid() -> dict[str, Any]:
        return {"app": "easy", "slo_ms": 5000, "input": {"exit": 1}}

    def normal(c: httpx.Client) -> None:
        r = c.post("/v1/infer", json=valid())
        assert r.status_code == 200, r.text
        assert r.json()["outcome"] == "ok", r.json()

    def leaks() -> dict[str, int]:
        return {"open_requests": d.open_requests}

    infer = Endpoint("/v1/infer", valid, InferRequest)
    with BackgroundServer(create_app(d, apps, settings)) as srv:
        yield Target("orloj", srv, [infer], normal, leaks)


# -- Venn --------------------------------------------------------------------------------
# Jobs from valid bodies (named "adv") are the suite's; any other job came from a body the
# service should have refused. Read by a connection of the test's own: what the service
# stored, not what it believes.
VENN_LEAKS = (
    ("unexpected_jobs", "SELECT COUNT(*) FROM jobs WHERE name != 'adv'"),
    ("over_assigned_rounds", "SELECT COUNT(*) FROM rounds WHERE dispatched > demand"),
)


@contextmanager
def venn(tmp: Path) -> Iterator[Target]:
    """The single-process service on its SQLite file."""
    db = tmp / "venn.sqlite"

    def leaks() -> dict[str, int]:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as view:
            return {name: view.execute(sql).fetchone()[0] for name, sql in VENN_LEAKS}

    with _venn_target("venn", str(db), leaks) as t:
        yield t


@contextmanager
def venn_postgres(tmp: Path) -> Iterator[Target]:
    """A front-end on PostgreSQL (a server of its own for the module): the deployment that
    runs several front-ends on one database."""
    import psycopg

    from tests.venn.service.postgres_server import start

    server = start()
    try:
        url = server.database("venn_adversarial")

        def leaks() -> dict[str, int]:
            with psycopg.connect(url) as conn:
                out = {}
                for name, sql in VENN_LEAKS:
                    row = conn.execute(sql).fetchone()
                    out[name] = int(row[0]) if row else -1
                return out

        with _venn_target("venn-postgres", url, leaks) as t:
            yield t
    finally:
        server.stop()


@contextmanager
def _venn_target(name: str, store: str, leaks: Callable[[], dict[str, int]]) -> Iterator[Target]:
    from kairos.venn.service.app import CheckinIn, JobIn, ServiceSettings, create_app

    settings = ServiceSettings(
        api_key=KEY, max_body_bytes=MAX_BODY, body_timeout_s=BODY_TIMEOUT_S, log_level="critical"
    )

    def valid_job() -> dict[str, Any]:
        return {"name": "adv", "demand": 2, "rounds": 1}

    def normal(c: httpx.Client) -> None:
        r = c.post("/v1/jobs", json=valid_job())
        assert r.status_code == 201, r.text
        assert c.get("/v1/jobs").status_code == 200
        r = c.post("/v1/checkin", json={"device_id": "adv-device"})
        assert r.status_code == 200, r.text

    jobs = Endpoint("/v1/jobs", valid_job, JobIn)
    checkin = Endpoint("/v1/checkin", lambda: {"device_id": "adv-device"}, CheckinIn)
    with BackgroundServer(create_app(settings, db=store)) as srv:
        yield Target(name, srv, [jobs, checkin], normal, leaks, {"db": store, "queue_bound": False})


# -- Salus -------------------------------------------------------------------------------
@contextmanager
def salus(tmp: Path) -> Iterator[Target]:
    from kairos.salus.runtime.server import create_app
    from kairos.salus.runtime.service import SalusService
    from kairos.salus.runtime.settings import ServiceSettings
    from kairos.salus.runtime.spec import JobSpec

    settings = ServiceSettings(
        api_key=KEY,
        max_body_bytes=MAX_BODY,
        body_timeout_s=BODY_TIMEOUT_S,
        max_jobs=MAX_WAITING,
        warmup=0,
        measured=1,
        torch_threads=1,
        log_level="critical",
    )
    service = SalusService(settings)

    def valid() -> dict[str, Any]:
        return {"name": "adv", "factory": "kairos.salus.runtime.zoo:vae", "iterations": 3,
                "expected_s": 0.1}  # fmt: skip

    def normal(c: httpx.Client) -> None:
        r = c.post("/v1/jobs", json=valid())
        assert r.status_code == 201, r.text
        job = c.get(f"/v1/jobs/{r.json()['id']}", params={"wait_s": 30}).json()
        assert job["state"] == "done" and job["iterations_done"] == 3, job

    def leaks() -> dict[str, int]:
        # what the service holds once idle: no open job, no session (program, memory), no
        # lane, lane thread or reserved byte, no live tensor storage counted to a job
        stats = service.stats()
        return {
            "open_jobs": service.open_jobs,
            "sessions": stats["sessions"],
            "lanes": len(stats["lanes"]),
            "lane_threads": stats["lane_threads"],
            "reserved_bytes": stats["reserved_bytes"],
            "used_bytes": stats["used_bytes"],
        }

    jobs = Endpoint("/v1/jobs", valid, JobSpec)
    with BackgroundServer(create_app(service)) as srv:
        yield Target("salus", srv, [jobs], normal, leaks)


BUILDERS: dict[str, Callable[[Path], AbstractContextManager[Target]]] = {
    "andes": andes,
    "orloj": orloj,
    "salus": salus,
    "venn": venn,
    "venn-postgres": venn_postgres,
}
