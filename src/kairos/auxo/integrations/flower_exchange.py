"""The server's side of Auxo's Flower messages (spec 2.3): check-in, feedback, evaluation.

Each function builds Flower Messages in the wire format of `flower_records` and reads the
replies; the strategy decides *what* to send. Nodes are drawn by index with the strategy's
own generator (Flower's 64-bit node ids do not fit numpy integers, and Python's `random`,
which Flower's `sample_nodes` uses, is not seeded by the run).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from logging import INFO

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, ConfigRecordValues, Message, MessageType, RecordDict
from flwr.serverapp import Grid
from flwr.supercore import log

from kairos.auxo.integrations.flower_records import (
    ARRAYS_PREFIX,
    AUXO,
    CHECKIN,
    FEEDBACK,
    NO_LABEL,
    auxo_config,
    float_field,
    int_field,
    str_field,
)
from kairos.auxo.matching import AffinityRequest


class ClientFailure(RuntimeError):
    """Every client of a round failed: a run that goes on would train nothing and report
    empty metrics, so it stops with the first client's own error."""


def check_replies(server_round: int, stage: str, replies: list[Message]) -> None:
    """Raise `ClientFailure` when a round got replies and every one carries an error (a model
    that does not fit the clients' data fails on every client alike). A few failed clients
    are tolerated, as Flower's strategies tolerate them."""
    failed = [m for m in replies if m.has_error()]
    if replies and len(failed) == len(replies):
        first = failed[0]
        raise ClientFailure(
            f"round {server_round}: all {len(replies)} clients failed in {stage}; "
            f"node {first.metadata.src_node_id}: {client_error(first.error.reason)}"
        )


def client_error(reason: str | None) -> str:
    """The client's own exception message out of the Ray traceback Flower wraps it in."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", reason or "").strip()
    if "Message: " in text:
        text = text.rsplit("Message: ", 1)[1]
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip().removesuffix("'>") if lines else "(no reason given)"


@dataclass(frozen=True)
class Feedback:
    """AffinityFeedback for one participant: its new L and dR (NaN: no reward this round),
    with the split history the cohort worked under (`before`)."""

    node: int
    cohort: str
    label: int
    delta: float
    before: str


def sample(nodes: list[int], size: int, rng: np.random.Generator) -> list[int]:
    """`size` distinct nodes drawn by index, kept in the order given."""
    picked = rng.choice(len(nodes), size=size, replace=False)
    return [nodes[int(i)] for i in sorted(picked)]


def wait_for_nodes(grid: Grid, need: int) -> list[int]:
    """The connected nodes once there are `need` of them (as Flower's `sample_nodes` waits)."""
    while len(nodes := sorted(grid.get_node_ids())) < need:
        log(INFO, "Auxo: waiting for nodes (%d of %d connected)", len(nodes), need)
        time.sleep(1.0)
    return nodes


def ask_for_requests(
    grid: Grid, nodes: list[int], server_round: int, splits: str, timeout: float | None
) -> dict[int, AffinityRequest]:
    """Check-in: send the tree to `nodes`, return each answering node's affinity request."""
    content = RecordDict({AUXO: ConfigRecord({"round": server_round, "splits": splits})})
    asks = [Message(content=content, message_type=CHECKIN, dst_node_id=n) for n in nodes]
    out: dict[int, AffinityRequest] = {}
    for reply in grid.send_and_receive(asks, timeout=timeout):
        if reply.has_error():
            continue
        cfg = auxo_config(reply.content)
        label = int_field(cfg, "label")
        out[reply.metadata.src_node_id] = AffinityRequest(
            int_field(cfg, "client"),
            str_field(cfg, "cohort"),
            None if label == NO_LABEL else label,
            float_field(cfg, "reward"),
        )
    return out


def send_feedback(grid: Grid, feedback: list[Feedback], after: str, timeout: float | None) -> int:
    """Send every participant its feedback and the tree now; return how many applied it."""
    messages = []
    for fb in feedback:
        fields: dict[str, ConfigRecordValues] = {
            "cohort": fb.cohort,
            "label": fb.label,
            "delta": fb.delta,
            "before": fb.before,
            "after": after,
        }
        content = RecordDict({AUXO: ConfigRecord(fields)})
        messages.append(Message(content=content, message_type=FEEDBACK, dst_node_id=fb.node))
    if not messages:
        return 0
    return sum(1 for m in grid.send_and_receive(messages, timeout=timeout) if not m.has_error())


def evaluation_messages(
    models: Mapping[str, ArrayRecord], splits: str, nodes: list[int]
) -> list[Message]:
    """Every leaf's model to every node: a client scores the cohort it belongs to."""
    content = RecordDict({ARRAYS_PREFIX + leaf: arrays for leaf, arrays in models.items()})
    content[AUXO] = ConfigRecord({"splits": splits})
    return [
        Message(content=content, message_type=MessageType.EVALUATE, dst_node_id=n) for n in nodes
    ]


def read_choice(reply: Message) -> tuple[int, str]:
    """(client, cohort) from an evaluation reply."""
    choice = auxo_config(reply.content)
    return int_field(choice, "client"), str_field(choice, "cohort")
