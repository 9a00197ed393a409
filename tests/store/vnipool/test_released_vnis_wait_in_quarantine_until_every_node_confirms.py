"""A released VNI is free again only when every node has destroyed its CXI services."""

from __future__ import annotations

from pipeline.model.jobid import encode_f58
from pipeline.store.vnipool import VniPool


def test_quarantined_vnis_are_not_handed_out_until_every_node_confirms(pool: VniPool) -> None:
    pool.configure("1024-1025")
    pool.reserve(1, 2)
    pool.release(1, ["node2", "node1"])
    assert pool.query()["quarantine"] == {
        encode_f58(1): {"vnis": [1024, 1025], "waiting": "node[1-2]"}
    }
    assert pool.query()["free"] == ""
    pool.confirm_destroyed(1, "node1")
    assert pool.query()["free"] == ""
    pool.confirm_destroyed(1, "node2")
    assert pool.query()["free"] == "1024-1025"
    assert pool.query()["quarantine"] == {}


def test_confirming_twice_or_for_an_unknown_job_changes_nothing(pool: VniPool) -> None:
    pool.configure("1024-1031")
    pool.reserve(1, 1)
    pool.release(1, ["node1", "node2"])
    pool.confirm_destroyed(1, "node1")
    pool.confirm_destroyed(1, "node1")
    pool.confirm_destroyed(99, "node1")
    assert pool.query()["quarantine"][encode_f58(1)]["waiting"] == "node2"


def test_a_release_without_nodes_frees_at_once(pool: VniPool) -> None:
    pool.configure("1024-1031")
    pool.reserve(1, 1)
    pool.release(1)
    assert pool.query()["free"] == "1024-1031"


def test_the_pool_survives_a_restart_of_every_client(pool: VniPool) -> None:
    pool.configure("1024-1031")
    pool.reserve(1, 2)
    pool.reserve(2, 1)
    pool.release(2, ["node1"])
    again = VniPool(pool.client, pool.keys)  # a new process: nothing but Redis
    assert again.query() == pool.query()
    assert again.reserve(3, 1) == [1027]  # the cursor too


def test_a_whole_machines_confirmations_take_one_call(pool: VniPool) -> None:
    nodes = [f"node{i}" for i in range(1, 11137)]
    pool.configure("1024-1025")
    pool.reserve(1, 2)
    pool.release(1, nodes)
    pool.confirm_destroyed(1, *nodes[:-1])
    assert pool.query()["quarantine"] == {
        encode_f58(1): {"vnis": [1024, 1025], "waiting": "node11136"}
    }
    pool.confirm_destroyed(1, *nodes)  # the last, with copies of the others
    assert pool.query()["free"] == "1024-1025"
