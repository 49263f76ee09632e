"""The probe a client makes at check-in (option `unlabelled_at_split="probe"`, not the text).

What it places and why: `kairos.auxo.split_labels`. This is the driver's side: the client
downloads the frame weights of the split it must resolve (the model that split's last
clustering round trained from), trains one local round on its own data (on the device, as any
round), and uploads the update; the coordinator answers with the nearest centroid's index. Its
cost is charged as a round's is: the download and upload to the run's model bytes, one
dispatched task, one participant-round (the local round is training work, though it is never
aggregated), the answer to the affinity bytes, and the client's time: it is busy for the probe's
duration (the runner's clock, as a task of its own), so it sends its affinity request only at
its next check-in after that. A probe that the device's availability cuts off returns no label
(the download is still charged) and the client keeps the text's tie rule until it probes again.

Under local DP (E6) the probe's update is privatized as any clustering input is. Each probe
draws from a stream of its own, seeded by (run seed, client, split), so with the option off a
run is bit for bit the run without this module, and the centralized and distributed modes
draw the same numbers (spec 3.10).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from kairos.auxo.evaluation import FLOAT_BYTES, Usage, message_bytes
from kairos.auxo.policy import AuxoPolicy
from kairos.auxo.robustness import Faults, privatize
from kairos.fl.learning import RoundRunner, local_train
from kairos.fl.timing import completes

_PROBE_STREAM = 6


class ProbeRun(Protocol):
    """What a probe touches of a run (`CohortTraining` satisfies it)."""

    runner: RoundRunner
    seed: int
    faults: Faults
    policy: AuxoPolicy
    usage: Usage
    free_at: np.ndarray


def probe_unlabelled(run: ProbeRun, client: int, t: float) -> bool:
    """Let `client`, checking in at time `t`, resolve a tie over a split's children by probes.
    Returns True when it probed (it is then busy until `run.free_at[client]`)."""
    runner, policy = run.runner, run.policy
    availability = runner.availability
    assert availability is not None
    n_bytes = runner.model.n_params * FLOAT_BYTES
    local = runner.algorithm.local(runner.local)
    data = runner.dataset.clients[client]
    clock = [t]

    def ask(split: str) -> int | None:
        frame = policy.split_frame(split)
        if frame is None or data.n_train == 0:
            return None
        path = [int(p) for p in split.split(".")]
        rng = np.random.default_rng([run.seed, _PROBE_STREAM, client, len(path), *path])
        who = np.array([client])
        work = np.array([local.work(data.n_train)])
        dur = 1.0 if runner.clock is None else float(runner.clock.durations(who, work, rng)[0])
        start = clock[0]
        clock[0] = start + dur
        run.usage.dispatched += 1
        run.usage.model_bytes += n_bytes  # the frame weights' download
        offline = availability.offline_at(who, start)
        if not completes(np.array([start]), np.array([dur]), offline)[0]:
            return None
        update = local_train(runner.model, frame.weights, data, local, rng).update
        view = privatize(update[None, :], [client], split, frame.round, run.faults, run.seed)
        run.usage.model_bytes += n_bytes  # the update's upload
        run.usage.participant_rounds += 1
        run.usage.affinity_bytes += message_bytes(split)
        return policy.probe_label(split, view[0])

    policy.place_unlabelled(client, ask)
    if clock[0] > t:
        run.free_at[client] = clock[0]
        return True
    return False
