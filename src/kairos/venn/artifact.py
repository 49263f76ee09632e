"""The Venn authors' artifact as a differential reference: its input formats and its rules.

The artifact (SymbioticLab/Venn, `src/venn_event.py`) reads a device trace (`ID,start,end`
rows, one one-task check-in each), a pickled capacity table (`{row + 1: {computation,
communication}}`), a pickled eligibility list (`[[1, 2, ...], ...]`, 1-based requirement ids a
row meets) and a job list. `write_artifact_inputs` writes one kairos workload and device trace
in those formats (the jobs as JSON, which `artifact_driver` hands to the artifact's own job
classes), and `load_artifact_inputs` reads the same files back into a kairos `Fleet` and job
list, so both simulators run on identical inputs. `read_artifact_output` reads the per-job
output the driver writes.

The artifact-compatible mode (`ArtifactFleet`, `artifact_sim_config`) carries the artifact's
device and round rules: every trace row is a device that checks in once, its window stretched
by 80 s (`setup_config.py:86`); the 5-day trace repeats every 432,000 s; a row's response time
is fixed (no per-task noise); supply is the last 1,000 check-ins (`irs.py:70`). Round rules
(deadline verdict, resubmission at full demand 0.1 s after a close) are already the artifact's
in `kairos.fl.timing.RoundRule` and the simulator.
"""

from __future__ import annotations

import csv
import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kairos.fl.availability import CheckIns, TraceAvailability
from kairos.fl.devices import DevicePopulation
from kairos.fl.jobs import FLJob
from kairos.fl.timing import RoundRule
from kairos.venn.fleet import CheckInChunk, Fleet
from kairos.venn.simulator import SimConfig
from kairos.venn.workloads import CLASSES

TRACE_DAYS = 5  # the artifact's NUM_DAY: the trace it replays
PERIOD_S = 432_000.0  # it repeats the trace every 5 days (`setup_config.py:84`)
STRETCH_S = 80.0  # and stretches every window by 80 s (`setup_config.py:86`)
WORKLOAD = 30.0  # the artifact's per-task `workload` (x computation ratio = compute seconds)
AVG_COMP = 78.0  # its average computation, the divisor of a row's computation
NO_COMM = 1e15  # a communication speed so high that the comm term is ~1e-10 s
CLIENTS_CSV = "trace/clients.csv"
CAPACITY = "trace/client_device_capacity"  # the path the artifact hard-codes
ELIGIBILITY = "trace/eligibility"
JOBS_JSON = "config/jobs.json"
META_JSON = "kairos_inputs.json"
# the artifact's readings of IRS (VennConfig fields; see `kairos.venn.irs`): line 12 on full
# request sizes (`irs.py:13`), idle groups holding atoms (`irs.py:78-107`), no fallback to other
# groups (`irs.py:136-140`), and a takeover that moves whole shares, so some devices serve jobs
# they do not qualify for (`irs.py:106-118`). Only the differential uses them.
ARTIFACT_VENN: dict[str, Any] = {
    "affected_key": "request",
    "idle_groups": "artifact",
    "work_conserving": False,
    "takeover": "whole",
}


@dataclass(frozen=True)
class ArtifactFleet(Fleet):
    """A fleet read from artifact inputs: device = trace row, atom and response time fixed."""

    row_atoms: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    row_response_s: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def atoms(self) -> np.ndarray:
        return self.row_atoms

    def chunk(self, k: int) -> CheckInChunk:
        c = self.source.chunk(k)
        rng = np.random.default_rng([self.seed, int(k), 0xA27])
        delay = rng.uniform(0.0, self.dispatch_delay_s, size=len(c))
        rt = self.row_response_s[c.device]
        return CheckInChunk(
            c.device.tolist(), c.start.tolist(), c.end.tolist(), rt.tolist(), delay.tolist()
        )


@dataclass(frozen=True)
class ArtifactInputs:
    """One workload and device trace as the artifact sees it (rows sorted by start)."""

    start: np.ndarray
    end: np.ndarray  # session end before the artifact's 80 s stretch
    response_s: np.ndarray
    atoms: np.ndarray  # bit k set: the row meets CLASSES[k] (artifact requirement id k + 1)
    jobs: list[FLJob]
    seed: int
    weeks: int

    def fleet(self) -> ArtifactFleet:
        """The kairos fleet of these rows under the artifact's device rules."""
        n = len(self.start)
        zeros = np.zeros(n)
        pop = DevicePopulation(
            zeros, zeros, zeros, zeros.astype(bool), self.response_s / 120.0, np.ones(n),
            np.full(n, -1),
        )  # fmt: skip
        windows = CheckIns(np.arange(n, dtype=np.int64), self.start, self.end)
        source = TraceAvailability(windows, PERIOD_S, n, STRETCH_S)
        return ArtifactFleet(
            pop, CLASSES, source, dispatch_delay_s=2.0, seed=self.seed,
            row_atoms=self.atoms.astype(np.int64), row_response_s=self.response_s,
        )  # fmt: skip


def artifact_sim_config(weeks: int, **overrides: Any) -> SimConfig:
    """The artifact's simulation rules: supply from the last 1,000 check-ins, the run capped
    where its END event is (NUM_DAY x NUM_WEEK days)."""
    fields: dict[str, Any] = {
        "supply_window": "count:1000",
        "resubmit_s": 0.1,
        "max_days": TRACE_DAYS * weeks,
    }
    return SimConfig(**{**fields, **overrides})


def fleet_rows(fleet: Fleet, days: float = TRACE_DAYS) -> tuple[np.ndarray, ...]:
    """The first `days` of a kairos fleet's check-ins: start, end, response, atom per row."""
    atoms = fleet.atoms()
    parts: list[tuple[np.ndarray, ...]] = []
    k = 0
    while True:
        c = fleet.chunk(k)
        start = np.asarray(c.start)
        keep = start <= days * 86_400.0
        dev = np.asarray(c.device)[keep]
        parts.append(
            (start[keep], np.asarray(c.end)[keep], np.asarray(c.response_s)[keep], atoms[dev])
        )
        if not keep.all() or len(start) == 0:
            break
        k += 1
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


def write_artifact_inputs(
    out: Path, jobs: list[FLJob], fleet: Fleet, seed: int, weeks: int = 4
) -> Path:
    """Write jobs and the fleet's first five days in the artifact's formats under `out`."""
    start, end, resp, atoms = fleet_rows(fleet)
    order = np.argsort(start, kind="stable")
    start, end, resp, atoms = start[order], end[order], resp[order], atoms[order]
    (out / "trace").mkdir(parents=True, exist_ok=True)
    (out / "config").mkdir(parents=True, exist_ok=True)
    with open(out / CLIENTS_CSV, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ID", "start", "end"])
        for i, (s, e) in enumerate(zip(start.tolist(), end.tolist(), strict=True)):
            w.writerow([i, repr(s), repr(e)])
    # the artifact's duration = workload * computation / 78 + 2 * 10 / (communication / 13736)
    capacity = {
        i + 1: {"computation": float(r) * AVG_COMP / WORKLOAD, "communication": NO_COMM}
        for i, r in enumerate(resp.tolist())
    }
    with open(out / CAPACITY, "wb") as f:
        pickle.dump(capacity, f)
    elig = [[k + 1 for k in range(len(CLASSES)) if a >> k & 1] for a in atoms.tolist()]
    with open(out / ELIGIBILITY, "wb") as f:
        pickle.dump(elig, f)
    (out / JOBS_JSON).write_text(json.dumps([_job_json(i, j) for i, j in enumerate(jobs)]))
    meta = {"seed": seed, "weeks": weeks, "rows": len(start), "jobs": len(jobs)}
    (out / META_JSON).write_text(json.dumps(meta))
    return out


def _job_json(i: int, job: FLJob) -> dict[str, Any]:
    return {
        "id": i,
        "job_id": job.job_id,
        "template": job.template,
        "arrival": job.arrival,
        "participants": job.participants,
        "rounds": job.rounds,
        "deadline": job.rule.deadline_s,
        "min_resp_frac": job.rule.min_resp_frac,
        "eligibility": CLASSES.index(job.requirement),  # the artifact adds 1
    }


def load_artifact_inputs(path: Path) -> ArtifactInputs:
    """Read the files `write_artifact_inputs` wrote (what the artifact reads) back."""
    meta = json.loads((path / META_JSON).read_text())
    with open(path / CLIENTS_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    start = np.array([float(r["start"]) for r in rows])
    end = np.array([float(r["end"]) for r in rows])
    with open(path / CAPACITY, "rb") as fb:
        cap = pickle.load(fb)
    resp = np.array([cap[i + 1]["computation"] * WORKLOAD / AVG_COMP for i in range(len(rows))])
    with open(path / ELIGIBILITY, "rb") as fb:
        elig = pickle.load(fb)
    atoms = np.array([sum(1 << (e - 1) for e in el) for el in elig], dtype=np.int64)
    jobs = [
        FLJob(
            job_id=j["job_id"],
            arrival=float(j["arrival"]),
            participants=int(j["participants"]),
            rounds=int(j["rounds"]),
            requirement=CLASSES[int(j["eligibility"])],
            rule=RoundRule(deadline_s=float(j["deadline"]), min_resp_frac=j["min_resp_frac"]),
            template=str(j["template"]),
        )
        for j in json.loads((path / JOBS_JSON).read_text())
    ]
    return ArtifactInputs(start, end, resp, atoms, jobs, int(meta["seed"]), int(meta["weeks"]))


def read_artifact_output(path: Path) -> dict[str, Any]:
    """The driver's output: per job (in input order) its JCT in seconds, None if unfinished."""
    raw = json.loads(path.read_text())
    jobs = sorted(raw["jobs"], key=lambda j: j["id"])
    jct = [j["finish"] - j["start"] if j["finish"] > 0 else None for j in jobs]
    done = [x for x in jct if x is not None]
    return {
        "sched": raw["sched"],
        "jct": jct,
        "aborts": [j["aborts"] for j in jobs],
        "finished": len(done),
        "avg_jct": float(np.mean(done)) if len(done) == len(jct) else float("inf"),
        "avg_jct_finished": float(np.mean(done)) if done else float("nan"),
        "wall_s": raw.get("wall", float("nan")),
    }
