"""A Flower Grid that hands each message straight to a ClientApp in this process.

Test-only transport: it keeps one Flower `Context` per node (so client state persists across
messages, as Flower's simulation engine keeps it) and records every message it delivers, so
unit tests can check what each cohort's base strategy sent without starting Ray.
"""

from __future__ import annotations

from collections.abc import Iterable

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import Grid
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity


class InProcessGrid(Grid):
    def __init__(self, app: ClientApp, n_nodes: int, first_node: int = 5000) -> None:
        self.app = app
        # Flower stamps every Message with the identity of the task that creates it; the
        # simulation engine sets it, so this stand-in for the engine does too.
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, SUPERLINK_NODE_ID
        self.contexts = {
            first_node + i: Context(
                run_id=1,
                node_id=first_node + i,
                node_config={"partition-id": i, "num-partitions": n_nodes},
                state=RecordDict(),
                run_config={},
            )
            for i in range(n_nodes)
        }
        self.delivered: list[Message] = []

    def set_run(self, run: Run) -> None:
        raise NotImplementedError

    @property
    def run(self) -> Run:
        raise NotImplementedError

    def create_message(
        self,
        content: RecordDict,
        message_type: str,
        dst_node_id: int,
        group_id: str,
        ttl: float | None = None,
    ) -> Message:
        return Message(content=content, message_type=message_type, dst_node_id=dst_node_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        raise NotImplementedError

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        raise NotImplementedError

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        replies = []
        for message in messages:
            node = message.metadata.dst_node_id
            self.delivered.append(message)
            replies.append(self.app(message, self.contexts[node]))
        return replies
