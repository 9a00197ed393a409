"""Every role's ACL against what that role really sends: a batch of jobs (rabbits, VNIs)
and a bad message on a node's queue run while ``MONITOR`` records every command; the node
worker's user sent only commands its ACL grants (``INCRBY`` for a dead letter's count
among them), and Redis refused no user anything (``ACL LOG`` is empty)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from pipeline.platform.acl import NODE_GRANTED
from tests.e2e.conftest import nodes, start_system

GRANTED = set(NODE_GRANTED)


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True, signing=True, acl=True)
    yield sim
    sim.stop()


def test_the_node_user_sends_only_what_its_acl_grants_and_nothing_is_refused(
    system: SimulatedSystem,
) -> None:
    assert system.redis is not None and system.users is not None and system.flux is not None
    user, password = system.users.admin
    admin = redis.Redis(port=system.redis.port, username=user, password=password)
    commands: dict[str, set[str]] = defaultdict(set)  # client address → commands
    stop = threading.Event()

    def record() -> None:
        with redis.Redis(
            port=system.redis.port, username=user, password=password
        ).monitor() as monitor:
            for line in monitor.listen():
                commands[str(line["client_address"]) + ":" + str(line["client_port"])].add(
                    str(line["command"]).split(" ", 1)[0].lower()
                )
                if stop.is_set():
                    return

    thread = threading.Thread(target=record, daemon=True)
    thread.start()
    jobids = [
        system.flux.submit(nodes(2), system={"dw": dw} if dw else {})
        for dw in ("#DW jobdw type=xfs capacity=10GiB name=scratch", None)
    ]
    admin.lpush("node.compute01", b"not a kombu message")  # the node worker sets it aside
    assert system.flux.wait_inactive(jobids, 90)
    assert [system.flux.job(j).result for j in jobids] == ["COMPLETED"] * 2
    node_addresses = {c["addr"] for c in admin.client_list() if c["user"] == "node"}
    stop.set()
    admin.ping()  # one more line for the monitor to see the stop
    thread.join(timeout=10)
    sent = set().union(*(commands[a] for a in node_addresses))
    assert sent, "the node worker sent nothing the monitor saw"
    assert sent <= GRANTED, sent - GRANTED
    assert "xadd" in sent  # its answers, and the dead letter, on its own stream
    assert "incrby" not in sent and "ltrim" not in sent  # the dead letters are not its
    assert system.acl_denials() == []
