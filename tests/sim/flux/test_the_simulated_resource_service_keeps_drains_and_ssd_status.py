"""The simulated Flux resource service: drains and undrains land in the RFC 44 eventlog and
survive a restart; an already drained node needs a mode, and bad modes and undrains
get flux-core 0.88's own errors; ssd vertices start down as
dws2jgf writes them, and a rabbit's ssd is given only while its vertices are up."""

from __future__ import annotations

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.flux.jobmanager import JobManager
from coral2_sim.flux.sched import Request

from pipeline.errors import FluxError
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.store import Store

MAPPING = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))


def names(store: Store) -> list[str]:
    return [e["name"] for e in store.resource_log.events()]


def test_a_start_posts_restart_define_and_online_with_r(store: Store) -> None:
    JobManager(MAPPING, eventlog=store.resource_log).resource.start()
    assert names(store) == ["restart", "resource-define", "online"]
    r = store.resource_log.r()
    assert r is not None and r["execution"]["nodelist"]


def test_drains_are_events_and_a_restarted_service_keeps_them(store: Store) -> None:
    jm = JobManager(MAPPING, eventlog=store.resource_log)
    jm.resource.start()
    jm.rpc("resource.drain", {"targets": "compute[01-02]", "reason": "failed to unmount rabbit"})
    jm.rpc("resource.undrain", {"targets": "compute01"})
    assert names(store)[-2:] == ["drain", "undrain"]
    again = JobManager(MAPPING, eventlog=store.resource_log)
    again.resource.start()
    assert again.resources.drained == {"compute02": "failed to unmount rabbit"}


def test_draining_a_drained_node_needs_a_mode_as_flux_core_says(store: Store) -> None:
    jm = JobManager(MAPPING, eventlog=store.resource_log)
    rank = jm.resources.ranks["compute03"]
    jm.rpc("resource.drain", {"targets": "compute03", "reason": "a"})
    with pytest.raises(FluxError, match=f"^rank {rank} already drained$"):
        jm.rpc("resource.drain", {"targets": "compute03", "reason": "b"})
    jm.rpc("resource.drain", {"targets": "compute03", "reason": "b", "mode": "update"})
    assert jm.resources.drained == {"compute03": "a"}  # update drains only what is not
    jm.rpc("resource.drain", {"targets": "compute03", "reason": "c", "mode": "overwrite"})
    assert jm.resources.drained == {"compute03": "c"}
    assert store.resource_log.drained(jm.resource.nodelist)[rank][1] == "c"


def test_modes_and_undrains_are_refused_with_flux_cores_errors(store: Store) -> None:
    jm = JobManager(MAPPING, eventlog=store.resource_log)
    rank = jm.resources.ranks["compute04"]
    with pytest.raises(FluxError, match=r"^Protocol error$"):
        jm.rpc("resource.drain", {"targets": "compute04", "mode": None})
    with pytest.raises(FluxError, match=r"^Invalid mode specified$"):
        jm.rpc("resource.drain", {"targets": "compute04", "mode": "force"})
    with pytest.raises(FluxError, match=r"^invalid undrain mode 'force' specified$"):
        jm.rpc("resource.undrain", {"targets": "compute04", "mode": "force"})
    with pytest.raises(FluxError, match=f"^rank {rank} not drained$"):
        jm.rpc("resource.undrain", {"targets": "compute04"})
    jm.rpc("resource.undrain", {"targets": "compute04", "mode": "update"})  # no error


def test_a_rabbit_with_its_ssds_down_gives_no_ssd_until_they_come_up() -> None:
    jm = JobManager(MAPPING, ssd_chunks=4)
    ssd_job = Request(nodes=1, groups=1, ssd_gib=1)
    assert jm.resources.allocate(ssd_job, None) is None
    assert jm.resources.allocate(Request(nodes=1), None) is not None  # no ssd: runs
    for i in range(4):
        jm.rpc(
            "sched-fluxion-resource.set_status",
            {"resource_path": f"/demo/chassis0/ssd{i}", "status": "up"},
        )
    _, ssd = jm.resources.allocate(ssd_job, None) or ([], {})
    assert list(ssd) == [next(iter(MAPPING.rabbits))]
    jm.rpc(
        "sched-fluxion-resource.set_status",
        {"resource_path": "/demo/chassis0/ssd0", "status": "down"},
    )
    capacity = MAPPING.rabbits[next(iter(ssd))].capacity // 2**30
    big = Request(nodes=1, groups=1, ssd_gib=capacity)
    assert jm.resources.allocate(big, None) is None  # a quarter of it is down
