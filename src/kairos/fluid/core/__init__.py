"""Fluid's pure core: the runtime model, the two planners, placement, the profiler's math and
the theory checks. No I/O, no clock: the driver feeds these and carries out what they return."""
