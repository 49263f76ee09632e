"""The Auxo client library for any Flower ClientApp (spec 2.2, bottom row; 3.10).

A Flower user keeps their own `train` handler (it receives the cohort's model like any
Flower model; the cohort id rides along in the config under `auxo-cohort`) and adds:

    add_auxo_handlers(app, params)             # check-in and feedback, records in context.state

    @app.evaluate()
    def evaluate(message, context):
        arrays, choice = cohort_to_evaluate(message, context, params)
        metrics = ...                           # score `arrays` on the local test split
        return Message(RecordDict({"metrics": metrics, AUXO: choice}), reply_to=message)

Check-in: learn the current tree, apply reward inheritance for splits not yet seen, choose a
leaf by decaying epsilon-greedy and reply with the affinity request (cohort, claimed L and R).
Feedback: exploit/explore update of the client's own record with the cohort's dR (tree
distances from the dotted ids) and copy of its new L, then catch up on splits. The record
never leaves the client. Client randomness is one stream per (client, round, purpose), so a
run does not depend on which Ray actor served which message.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from kairos.auxo.integrations.flower_records import (
    ARRAYS_PREFIX,
    AUXO,
    NO_LABEL,
    auxo_config,
    catch_up,
    decode_splits,
    float_field,
    int_field,
    load_record,
    save_record,
    str_field,
)
from kairos.auxo.params import AuxoParams
from kairos.auxo.policy import best_leaf
from kairos.auxo.rewards import apply_feedback
from kairos.auxo.selection import select_cohort

CHOOSE, TRAIN = 0, 1  # purposes of the per-client random streams


def client_id(context: Context) -> int:
    """The client's stable id: its Flower partition id (node ids are random per run)."""
    return int(context.node_config["partition-id"])


def client_rng(seed: int, client: int, round: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng([seed, 7, client, round, purpose])


def reply(message: Message, **records: Any) -> Message:
    return Message(RecordDict(records), reply_to=message)


def add_auxo_handlers(app: ClientApp, params: AuxoParams, seed: int = 0) -> ClientApp:
    """Register Auxo's check-in and feedback handlers on `app` (returned for chaining)."""

    @app.query("auxo_checkin")
    def checkin(message: Message, context: Context) -> Message:
        cid = client_id(context)
        cfg = auxo_config(message.content)
        record = load_record(context.state)
        leaves = catch_up(record, decode_splits(str_field(cfg, "splits")), params)
        r = int_field(cfg, "round")
        choice = select_cohort(record, leaves, r, params, client_rng(seed, cid, r, CHOOSE))
        save_record(context.state, record)
        entry = record.get(choice)
        label = NO_LABEL if entry is None or entry.label is None else entry.label
        reward = 0.0 if entry is None else entry.reward
        request = ConfigRecord({"cohort": choice, "label": label, "reward": reward, "client": cid})
        return reply(message, **{AUXO: request})

    @app.query("auxo_feedback")
    def feedback(message: Message, context: Context) -> Message:
        cfg = auxo_config(message.content)
        record = load_record(context.state)
        leaves = catch_up(record, decode_splits(str_field(cfg, "before")), params)
        delta = float_field(cfg, "delta")
        label = int_field(cfg, "label")
        apply_feedback(
            record,
            str_field(cfg, "cohort"),
            None if math.isnan(delta) else delta,
            None if label == NO_LABEL else label,
            leaves,
            params,
        )
        catch_up(record, decode_splits(str_field(cfg, "after")), params)
        save_record(context.state, record)
        return reply(message, **{AUXO: ConfigRecord({"applied": True})})

    return app


def cohort_to_evaluate(
    message: Message, context: Context, params: AuxoParams
) -> tuple[ArrayRecord, ConfigRecord]:
    """The model of the cohort this client belongs to (its highest reward), and the record
    that tells the server which cohort that was (put it in the reply under `AUXO`)."""
    cfg = auxo_config(message.content)
    record = load_record(context.state)
    leaves = catch_up(record, decode_splits(str_field(cfg, "splits")), params)
    save_record(context.state, record)
    leaf = best_leaf(record, leaves)
    choice = ConfigRecord({"cohort": leaf, "client": client_id(context)})
    return message.content.array_records[ARRAYS_PREFIX + leaf], choice
