"""Decisions as plain records: what a system's policy hands its mechanism, logged and replayed.

Every system's driver turns its policy's decision into a frozen dataclass of ids and numbers
(`record.py` says what may go in one). A driver can append them, with the time it decided, to a
JSON-lines decision log (`log.py`); a recorded real run is replayed through the simulator's
driver and the two sequences compared decision by decision (`replay.py`). Because the records
carry no live objects, the same policy can also run inside another engine.
"""

from kairos.decisions.log import DecisionLog, DecisionLogError, LoadedLog, read_log
from kairos.decisions.record import Codec, Entries, Entry, Recorder, is_plain
from kairos.decisions.replay import Divergence, altered, first_divergence

__all__ = [
    "Codec",
    "DecisionLog",
    "DecisionLogError",
    "Divergence",
    "Entries",
    "Entry",
    "LoadedLog",
    "Recorder",
    "altered",
    "first_divergence",
    "is_plain",
    "read_log",
]
