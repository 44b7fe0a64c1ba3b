# SPDX-License-Identifier: Apache-2.0
"""A Grid for tests: a flwr.serverapp.Grid whose nodes answer at once, in
this process, with no SuperLink.

What a ServerApp sees is what Flower's own grids give it: push_messages sets
each instruction's message_id to its object_id (as the SuperLink-backed grid
of flwr 1.42 does), each node builds its reply with
Message(content_or_error, reply_to=instruction) (Flower's constructor: run,
source and destination nodes, group, type and reply_to_message_id come from
the instruction), and the reply's message_id is its object_id, as a
SuperNode sets it. Replies come back in the order the instructions went out.

    grid = StubGrid(run_id=7, nodes={101: answer, 102: answer})
    with server_identity(grid):   # as the ServerApp runtime sets TaskIdentity
        msgs = [Message(RecordDict(...), 101, MessageType.TRAIN, group_id="1")]
        replies = list(grid.send_and_receive(msgs))

`answer(node_id, message)` returns the reply's RecordDict, or a flwr Error
for an error reply. grid.delivered lists every reply handed out.
"""

import contextlib
import logging

from flwr.app import Error, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import Grid
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity


class StubGrid(Grid):
    def __init__(self, run_id, nodes):
        self._run = Run.create_empty(run_id)
        self.nodes = dict(nodes)  # node_id -> answer(node_id, message)
        self.pending = {}  # message_id -> instruction, until pulled
        self.delivered = []

    def set_run(self, run):
        self._run = run

    @property
    def run(self):
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self):
        return list(self.nodes)

    def push_messages(self, messages):
        ids = []
        for msg in messages:
            if msg.metadata.dst_node_id not in self.nodes:
                raise ValueError(f"StubGrid: no node {msg.metadata.dst_node_id}")
            if msg.metadata.run_id != self._run.run_id:
                raise ValueError(f"StubGrid: message of run {msg.metadata.run_id}, the grid's is {self._run.run_id}")
            msg.metadata.__dict__["_message_id"] = msg.object_id
            self.pending[msg.metadata.message_id] = msg
            ids.append(msg.metadata.message_id)
        return ids

    def pull_messages(self, message_ids):
        replies = []
        for mid in message_ids:
            ins = self.pending.pop(mid)
            out = self.nodes[ins.metadata.dst_node_id](ins.metadata.dst_node_id, ins)
            if not isinstance(out, (RecordDict, Error)):
                raise TypeError(f"StubGrid: a node answered {type(out).__name__}, not RecordDict or Error")
            reply = Message(out, reply_to=ins)
            reply.metadata.__dict__["_message_id"] = reply.object_id
            replies.append(reply)
        self.delivered += replies
        return replies

    def send_and_receive(self, messages, *, timeout=None):
        return self.pull_messages(self.push_messages(messages))


@contextlib.contextmanager
def server_identity(grid):
    """TaskIdentity as the ServerApp runtime sets it (run, SuperLink node,
    task), so that Message(content, dst_node_id, message_type) works; the
    previous identity is restored afterwards."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = grid.run.run_id, SUPERLINK_NODE_ID, 1
    try:
        yield
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


@contextlib.contextmanager
def quiet_flower():
    """Flower's logger at WARNING (its strategies log every sampling and
    every reply at INFO), restored afterwards."""
    log = logging.getLogger("flwr")
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)
