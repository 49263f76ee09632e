"""The kernel: a deterministic event loop, clocks (timer services), and seeded random streams.

Time is in seconds. Every simulator and every runtime driver in kairos runs on these pieces,
and nothing else lives here.
"""

from kairos.sim.clock import AsyncioClock, Clock, SimClock, Timers, WallClock
from kairos.sim.event_loop import EventHandle, EventLoop
from kairos.sim.rng import RngStreams
from kairos.sim.virtual import VirtualTimeError, VirtualTimeLoop, run_virtual

__all__ = [
    "AsyncioClock",
    "Clock",
    "EventHandle",
    "EventLoop",
    "RngStreams",
    "SimClock",
    "Timers",
    "VirtualTimeError",
    "VirtualTimeLoop",
    "WallClock",
    "run_virtual",
]
