"""A job's node messages past ``pipeline.send_chunk`` go out as ``job.send_nodes`` tasks
whose arguments name each task and its arguments once, with its nodes as a hostlist —
never a copy of the arguments for each node, which made a whole machine's chunks hundreds
of kilobytes. A chunk in the previous release's form (each node's arguments) is still
sent; a malformed one is refused, saying what a chunk holds, and sends nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from tests.conftest import make_r
from tests.tasks.eager_app import eager_app, store_of_app
from tests.tasks.test_a_task_killed_between_any_two_of_its_actions_loses_nothing import ENV

JOBID = 4545
PROLOG = {"jobid": JOBID, "userid": 1001, "clientmount": None}


@pytest.fixture
def kube_url(kube: tuple[KubeApiServer, DwsClient]) -> str:
    return kube[0].url


def sent(store: Any, name: str) -> dict[str, dict[str, Any]]:
    """The ledger's open entries of task ``name``: task id → kwargs."""
    entries, _ = store.ledger.scan(10_000)
    return {e.task_id: e.kwargs for e in entries if e.name == name}


def test_each_chunk_past_the_first_names_its_task_once_with_its_nodes_as_a_hostlist(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    app = eager_app(tmp_path, redis_url, kube_url, CORAL2_PIPELINE_PIPELINE__SEND_CHUNK="2", **ENV)
    store = store_of_app(app)
    start = {"jobid": JOBID, "userid": 1001, "R": make_r("c[1-5]")}
    app.tasks["job.run"].apply(kwargs=start, throw=True)
    [prologs] = sent(store, "job.prologs").values()  # the plan, once the VNIs are reserved
    app.tasks["job.prologs"].apply(kwargs=prologs, throw=True)

    chunks = list(sent(store, "job.send_nodes").values())
    groups = sorted((g for chunk in chunks for g in chunk["groups"]), key=lambda g: g[2])
    assert [(name, hosts) for name, _kwargs, hosts in groups] == [
        ("node.prolog", "c5"),
        ("node.prolog", "c[3-4]"),
    ]
    for _name, kwargs, _hosts in groups:
        assert kwargs["jobid"] == JOBID and "hostname" not in kwargs
    assert all(set(chunk) == {"jobid", "groups"} for chunk in chunks)
    # the first chunk went out from job.prologs itself
    assert sorted(k["hostname"] for k in sent(store, "node.prolog").values()) == ["c1", "c2"]

    for chunk in chunks:
        app.tasks["job.send_nodes"].apply(kwargs=chunk, throw=True)
    hosts = sorted(k["hostname"] for k in sent(store, "node.prolog").values())
    assert hosts == ["c1", "c2", "c3", "c4", "c5"]


def test_a_chunk_in_the_previous_releases_form_is_still_sent(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    app = eager_app(tmp_path, redis_url, kube_url)
    store = store_of_app(app)
    sends = [["c7", "node.prolog", {**PROLOG, "hostname": "c7"}]]
    app.tasks["job.send_nodes"].apply(kwargs={"jobid": JOBID, "sends": sends}, throw=True)
    assert list(sent(store, "node.prolog").values()) == [{**PROLOG, "hostname": "c7"}]


@pytest.mark.parametrize(
    "groups",
    [
        [["node.prolog", PROLOG, "c[1-"]],  # a hostlist that does not parse
        [["node.prolog", ["not", "a", "mapping"], "c1"]],
        [["node.prolog", PROLOG]],  # no hostlist
    ],
)
def test_a_malformed_chunk_is_refused_and_sends_nothing(
    tmp_path: Path, redis_url: str, kube_url: str, groups: list[Any]
) -> None:
    app = eager_app(tmp_path, redis_url, kube_url)
    store = store_of_app(app)
    app.tasks["job.send_nodes"].apply(kwargs={"jobid": JOBID, "groups": groups}, throw=True)
    said = [e.what for e in store.timeline.read(JOBID)]
    assert any(
        "job.send_nodes needs groups of [task name, kwargs, hostlist]" in line for line in said
    ), said
    assert sent(store, "node.prolog") == {}
