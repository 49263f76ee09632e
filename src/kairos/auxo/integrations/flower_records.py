"""What Auxo's Flower server and clients put in Flower's records (the wire format of spec 2.3).

Both sides import this module, so a key or an encoding is written once. Three things travel:

* the cohort tree, as the ordered list of split parents (`"0;0.1"`: the root split, then
  "0.1"); with the branching factor K every party rebuilds the leaves from it and a client
  applies reward inheritance (spec 3.4) for each split it has not seen yet. Dotted ids make
  tree distances computable on the client (spec 3.10);
* the affinity record of one client, kept in its own Flower state (`context.state`) as one
  ConfigRecord with three entries per cohort: reward, cluster index (-1 = N/A), explored;
* model parameters as Flower ArrayRecords; Auxo clusters the flat concatenation of their
  arrays in key order (the last keys are the layers nearest the output, which is what the
  `grad_fraction` compression keeps).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, ConfigRecordValues, RecordDict

from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import AffinityEntry, inherit
from kairos.auxo.tree import ROOT

CHECKIN = "query.auxo_checkin"  # server -> client: current tree; reply: the affinity request
FEEDBACK = "query.auxo_feedback"  # server -> participant: dR, L and the tree
AUXO = "auxo"  # ConfigRecord key of Auxo's fields inside a message
COHORT = "auxo-cohort"  # the leaf a train message belongs to (inside the base's config)
STATE = "auxo-affinity"  # ConfigRecord key of the affinity record in a client's state
ARRAYS_PREFIX = "auxo-arrays:"  # evaluation messages carry one ArrayRecord per leaf
NO_LABEL = -1


# --------------------------------------------------------------------------------- the tree
def encode_splits(parents: Iterable[str]) -> str:
    """The split history as one string (ConfigRecord values are flat)."""
    return ";".join(parents)


def decode_splits(text: str) -> list[str]:
    return [p for p in text.split(";") if p]


def leaves_of(splits: Sequence[str], k: int) -> list[str]:
    """Leaves after splitting `splits` in order, each into k children, in id order."""
    leaves = {ROOT}
    for parent in splits:
        if parent not in leaves:
            raise ValueError(f"split of {parent!r}, which is not a leaf at that point")
        leaves.remove(parent)
        leaves.update(f"{parent}.{j}" for j in range(k))
    return sorted(leaves)


def catch_up(
    record: dict[str, AffinityEntry], splits: Sequence[str], params: AuxoParams
) -> list[str]:
    """Apply reward inheritance for every split in order (idempotent); return the leaves.

    `inherit` leaves a record alone when it already holds the children, so hearing of the
    same split twice changes nothing.
    """
    for parent in splits:
        inherit(record, parent, [f"{parent}.{j}" for j in range(params.k)], params)
    return leaves_of(splits, params.k)


# ------------------------------------------------------------------- the affinity record
def load_record(state: RecordDict) -> dict[str, AffinityEntry]:
    """The client's affinity record from its Flower state (empty for a new client)."""
    if STATE not in state.config_records:
        return {}
    raw = state.config_records[STATE]
    record: dict[str, AffinityEntry] = {}
    for key, value in raw.items():
        kind, cohort = key.split(":", 1)
        entry = record.setdefault(cohort, AffinityEntry())
        if kind == "R":
            entry.reward = float_field(raw, key)
        elif kind == "L":
            label = int_field(raw, key)
            entry.label = None if label == NO_LABEL else label
        elif kind == "X":
            entry.explored = bool(value)
    return record


def save_record(state: RecordDict, record: dict[str, AffinityEntry]) -> None:
    """Write the affinity record back into the client's Flower state."""
    fields: dict[str, ConfigRecordValues] = {}
    for cohort, entry in record.items():
        fields[f"R:{cohort}"] = float(entry.reward)
        fields[f"L:{cohort}"] = NO_LABEL if entry.label is None else int(entry.label)
        fields[f"X:{cohort}"] = bool(entry.explored)
    state[STATE] = ConfigRecord(fields)


# ------------------------------------------------------------------------------ parameters
def flatten(arrays: ArrayRecord) -> np.ndarray:
    """All arrays of a record as one float64 vector, in key order."""
    parts = [np.asarray(a, dtype=np.float64).ravel() for a in arrays.to_numpy_ndarrays()]
    return np.concatenate(parts) if parts else np.zeros(0)


def unflatten_like(vector: np.ndarray, like: ArrayRecord) -> ArrayRecord:
    """A record with the keys, shapes and dtypes of `like`, filled from a flat vector."""
    out: dict[str, Array] = {}
    pos = 0
    for key, array in zip(like.keys(), like.to_numpy_ndarrays(), strict=True):
        size = int(array.size)
        out[key] = Array(
            np.asarray(vector[pos : pos + size], dtype=array.dtype).reshape(array.shape)
        )
        pos += size
    if pos != vector.size:
        raise ValueError(f"vector has {vector.size} values, the record holds {pos}")
    return ArrayRecord(array_dict=out)


def int_field(record: ConfigRecord, key: str) -> int:
    """A record's integer field (ConfigRecord values are a union; this checks the type)."""
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"field {key!r} should be an int, got {value!r}")
    return value


def float_field(record: ConfigRecord, key: str) -> float:
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"field {key!r} should be a number, got {value!r}")
    return float(value)


def str_field(record: ConfigRecord, key: str) -> str:
    value = record[key]
    if not isinstance(value, str):
        raise TypeError(f"field {key!r} should be a string, got {value!r}")
    return value


def auxo_config(content: RecordDict) -> ConfigRecord:
    """Auxo's fields of a message (an empty record when there are none)."""
    return content.config_records.get(AUXO, ConfigRecord())
