"""Lifecycle deadlines: the fatal exceptions of flux-coral2's timers, and tolerated node loss."""

from __future__ import annotations

import json
from typing import Any

import redis
from celery import Celery
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.model.job import Epilog, Teardown
from pipeline.model.told import Change, Told
from pipeline.perform import deadlines as arming
from pipeline.platform.sending import settings_of
from pipeline.store import JobRecord, Keys, Store
from pipeline.tasks import timeouts
from tests.platform.results import result_of


def setup_job(
    celery_app: Celery, kube_api: KubeApiServer, jobid: int, status: dict[str, Any], **record: Any
) -> tuple[Store, DwsClient]:
    dws = DwsClient(client.ApiClient(client.Configuration(host=kube_api.url)))
    store = Store(
        redis.Redis.from_url(celery_app.conf.broker_url),
        Keys(settings_of(celery_app).pipeline.key_prefix),
    )
    dws.create_workflow(
        {"metadata": {"name": f"fluxjob-{jobid}"}, "spec": {"desiredState": status["state"]}}
    )
    dws.patch("workflows", f"fluxjob-{jobid}", {"status": status})
    store.jobs.create(JobRecord(jobid=jobid, **record))
    return store, dws


def fire(store: Store, jobid: int, kind: str) -> bool:
    arming.arm(store, jobid, kind, 0.0, "t")
    result: bool = result_of(timeouts.fire, jobid=jobid, kind=kind, token="t", due=0.0)
    return result


def exceptions(store: Store, jobid: int) -> list[dict[str, Any]]:
    entries: Any = store.client.xrange(store.keys.outbox)
    return [
        json.loads(f[b"payload"])
        for _, f in entries
        if f[b"kind"] == b"exception" and json.loads(f[b"payload"])["id"] == jobid
    ]


def test_teardown_after_tears_down_with_a_non_fatal_exception(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    store, dws = setup_job(
        celery_app, kube_api, 901, {"state": "PostRun", "ready": False, "status": "DriverWait"}
    )
    assert fire(store, 901, "teardown_after") is True
    assert exceptions(store, 901) == [
        {
            "id": 901,
            "type": "teardown-timeout",
            "severity": 1,
            "note": "skipping rabbit data movement",
        }
    ]
    assert dws.get_workflow("fluxjob-901")["spec"]["desiredState"] == "Teardown"
    record = store.jobs.get(901)
    assert record is not None
    assert record.teardown == Teardown.ASKED


def test_a_setup_timeout_without_tolerance_is_fatal(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    store, _ = setup_job(
        celery_app, kube_api, 902, {"state": "Setup", "ready": False}, failure_tolerance=0
    )
    fire(store, 902, "setup_timeout")
    assert exceptions(store, 902) == [
        {
            "id": 902,
            "type": "dws-timeout",
            "severity": 0,
            "note": "File system creation took too long",
        }
    ]


def test_a_transient_condition_held_too_long_is_fatal(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    store, _ = setup_job(
        celery_app,
        kube_api,
        903,
        {"state": "Setup", "ready": False},
        tc_since=1.0,
        tc_message="DW Directive 0: flaky",
    )
    fire(store, 903, "tc_timeout")
    (raised,) = exceptions(store, 903)
    assert raised["note"] == (
        "DWS/Rabbit interactions failed: workflow in 'TransientCondition' state too long: "
        "DW Directive 0: flaky"
    )
    record = store.jobs.get(903)
    assert record is not None
    assert record.tc_since is None


def test_a_prerun_timeout_within_tolerance_drops_the_unmounted_node_and_forces_ready(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    store, dws = setup_job(
        celery_app,
        kube_api,
        904,
        {"state": "PreRun", "ready": False},
        failure_tolerance=1,
        hosts=["n1", "n2"],
    )
    for node, state in (("n1", "mounted"), ("n2", "unmounted")):
        dws.create(
            "clientmounts",
            {
                "metadata": {
                    "name": "default-fluxjob-904-0-computes",
                    "labels": {"dataworkflowservices.github.io/workflow.name": "fluxjob-904"},
                },
                "spec": {"node": node},
            },
            namespace=node,
        )
        dws.patch(
            "clientmounts",
            "default-fluxjob-904-0-computes",
            {"status": {"mounts": [{"state": state, "ready": state == "mounted"}]}},
            namespace=node,
            status=True,
        )
    fire(store, 904, "prerun_timeout")
    assert exceptions(store, 904) == [
        {"id": 904, "type": "dws-node-failure", "severity": 1, "note": "n2"}
    ]
    assert dws.get_workflow("fluxjob-904")["spec"]["forceReady"] is True
    record = store.jobs.get(904)
    assert record is not None
    assert record.failed_nodes == ["n2"]


def test_abort_drains_computes_that_kept_their_mounts_and_disables_rabbits_with_allocations(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    from pipeline.tasks.dws import abort

    store, dws = setup_job(celery_app, kube_api, 905, {"state": "PostRun", "ready": False})
    labels = {"dataworkflowservices.github.io/workflow.name": "fluxjob-905"}
    dws.create(
        "clientmounts",
        {
            "metadata": {"name": "default-fluxjob-905-0-computes", "labels": labels},
            "spec": {"node": "m1"},
        },
        namespace="m1",
    )
    dws.patch(
        "clientmounts",
        "default-fluxjob-905-0-computes",
        {"status": {"mounts": [{"state": "mounted", "ready": True}]}},
        namespace="m1",
        status=True,
    )
    dws.create("servers", {"metadata": {"name": "fluxjob-905-0", "labels": labels}, "spec": {}})
    dws.patch(
        "servers",
        "fluxjob-905-0",
        {
            "status": {
                "allocationSets": [{"label": "xfs", "storage": {"rabbit-a": {"allocationSize": 5}}}]
            }
        },
        status=True,
    )
    dws.create("storages", {"metadata": {"name": "rabbit-a"}, "spec": {"state": "Enabled"}})
    dws.create("systemstatuses", {"metadata": {"name": "default"}, "data": {"nodes": {}}})
    result_of(abort, jobid=905)
    entries: Any = store.client.xrange(store.keys.outbox)
    drains = [json.loads(f[b"payload"]) for _, f in entries if f[b"kind"] == b"drain"]
    assert {"targets": "m1", "mode": "update", "reason": "failed to unmount rabbit"} in drains
    storage = dws.get("storages", "rabbit-a")
    assert storage["spec"]["state"] == "Disabled"
    assert (
        storage["metadata"]["annotations"]["disable_reason"]
        == "workflow fluxjob-905 timed out with an active allocation on this rabbit"
    )
    assert dws.get("systemstatuses", "default")["data"]["nodes"]["m1"] == "Disabled"
    record = store.jobs.get(905)
    assert record is not None
    assert record.epilog == Epilog.ABANDONED and record.teardown == Teardown.ASKED


def test_a_prerun_timeout_takes_down_the_ssds_of_a_rabbit_whose_own_mount_never_came_up(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    store, dws = setup_job(
        celery_app, kube_api, 917, {"state": "PreRun", "ready": False}, hosts=["n1"]
    )
    ssds = ["/demo/chassis0/ssd0", "/demo/chassis0/ssd1"]
    store.told.change("rabbit1", lambda told: Change([], Told(ssd="up", paths=tuple(ssds))))
    dws.create(
        "clientmounts",
        {
            "metadata": {
                "name": "default-fluxjob-917-0-servers",
                "labels": {"dataworkflowservices.github.io/workflow.name": "fluxjob-917"},
            },
            "spec": {"node": "rabbit1"},  # its nnf-node-manager never answers: no status
        },
        namespace="rabbit1",
    )
    fire(store, 917, "prerun_timeout")
    entries: Any = store.client.xrange(store.keys.outbox)
    told = [json.loads(f[b"payload"]) for _, f in entries if f[b"kind"] == b"set-status"]
    assert told == [{"resource_path": p, "status": "down"} for p in ssds]
    assert store.told.get("rabbit1").daemon_down is True
    assert [e["type"] for e in exceptions(store, 917)] == ["dws-timeout"]
