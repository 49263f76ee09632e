"""The kernel: a deterministic event loop, clocks, and seeded random streams.

Every simulator in kairos runs on these three pieces and nothing else lives here.
"""

from kairos.sim.clock import Clock, SimClock, WallClock
from kairos.sim.event_loop import EventHandle, EventLoop
from kairos.sim.rng import RngStreams

__all__ = ["Clock", "EventHandle", "EventLoop", "RngStreams", "SimClock", "WallClock"]
