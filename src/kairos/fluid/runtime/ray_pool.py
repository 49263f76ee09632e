"""The Ray backend: the same driver and `LocalBackend` over slot workers that are Ray actors.

Each virtual device is a placement group with one bundle holding the whole device (a `GPU`
where Ray sees GPUs; on CPU-only hosts a custom resource, `vgpu` by default, that the cluster
must offer, e.g. `ray.init(resources={"vgpu": n})`). Its `c` slots are actors scheduled into
that bundle, each asking `1 / c` of the device, so the slots of one device always share one
device and no other placement can take it; a gang of width `w` runs on slot 0 of `w` devices,
joined by `gloo` as in the local backend. Everything above the pool (placement, resizes by
checkpoint and relaunch, the decisions) is the local backend's and the driver's, unchanged:
what changes is only where a slot's worker lives, so the same run goes from this machine's
local Ray to a real cluster. Checkpoints go to `run_dir`, which every node must see (a shared
filesystem) when the cluster has more than one node.
"""

from __future__ import annotations

from typing import Any

from kairos.fluid.runtime.local import Slot, WorkerPool
from kairos.fluid.runtime.worker import SlotWorker, WorkerHandle

__all__ = ["ActorHandle", "RayWorkerPool"]


class ActorHandle(WorkerHandle):
    """One slot's worker as a Ray actor in its device's placement group."""

    def __init__(self, name: str, make: Any) -> None:
        self._make = make  # () -> actor handle; called again if the actor dies
        super().__init__(name)

    def _spawn(self) -> None:
        self.actor = self._make()

    def _exchange(self, msg: tuple[Any, ...]) -> tuple[str, Any]:
        import ray

        if msg[0] == "exit":
            return "ok", None
        try:
            status, value = ray.get(self.actor.handle.remote(msg))
            return status, value
        except ray.exceptions.RayActorError as exc:
            self._spawn()
            return "error", f"worker {self.name} died: {type(exc).__name__}"

    def close(self, timeout: float = 10.0) -> None:
        import ray

        self.stop(timeout)
        ray.kill(self.actor)


class RayWorkerPool(WorkerPool):
    """`n_gpus` virtual devices of `c` slots on the running Ray cluster (`ray.init` first).
    `resource` is what one device is: "GPU" on GPU nodes, a custom resource on CPU hosts."""

    def __init__(
        self,
        n_gpus: int,
        c: int,
        factory: str | None = None,
        resource: str = "vgpu",
        cpus_per_slot: float = 0.0,
    ) -> None:
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if not ray.is_initialized():
            raise RuntimeError("RayWorkerPool needs a running Ray: call ray.init() first")
        have = ray.cluster_resources().get(resource, 0.0)
        if have < n_gpus:
            raise ValueError(
                f"the Ray cluster offers {have:g} of resource {resource!r}, the pool needs "
                f"{n_gpus} (one per virtual device); start Ray with resources={{{resource!r}: "
                f"{n_gpus}}} on a CPU host"
            )
        self.n, self.c, self.resource = n_gpus, c, resource
        self.groups = [placement_group([{resource: 1.0}]) for _ in range(n_gpus)]
        if not all(g.wait(120) for g in self.groups):
            for g in self.groups:
                remove_placement_group(g)
            raise RuntimeError("the devices' placement groups were not granted within 120 s")
        actor_cls = ray.remote(SlotWorker)
        share = {resource: 1.0 / c}
        if resource == "GPU":
            options: dict[str, Any] = {"num_gpus": 1.0 / c}
        else:
            options = {"resources": share}

        def maker(g: int) -> Any:
            strategy = PlacementGroupSchedulingStrategy(self.groups[g], 0)
            return lambda: actor_cls.options(
                num_cpus=cpus_per_slot, scheduling_strategy=strategy, **options
            ).remote()

        self.workers: dict[Slot, WorkerHandle] = {
            (g, s): ActorHandle(f"gpu{g}-slot{s}", maker(g))
            for g in range(n_gpus)
            for s in range(c)
        }
        self._ping(factory)

    def granted(self, slot: Slot) -> dict[str, Any]:
        """What Ray gave the slot's actor, asked of the actor itself: its placement group id
        and its resources (e.g. `{"vgpu": 0.5}`)."""
        import ray

        handle = self.workers[slot]
        assert isinstance(handle, ActorHandle)
        out: dict[str, Any] = ray.get(handle.actor.where.remote())
        return out

    def group_id(self, device: int) -> str:
        return str(self.groups[device].id.hex())

    def close(self) -> None:
        from ray.util.placement_group import remove_placement_group

        super().close()
        for g in self.groups:
            remove_placement_group(g)
