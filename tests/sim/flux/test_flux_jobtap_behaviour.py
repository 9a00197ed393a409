"""The simulated job manager's dws-jobtap behaves as the plugin.

The ``dws.*`` service here is a scripted stand-in for coral2_dws, as in
flux-coral2's own t1000 tests; the pipeline's real hooks are exercised by
tests/lifecycle.
"""

from __future__ import annotations

from typing import Any

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.flux.jobmanager import JobManager

from pipeline.errors import FluxError
from pipeline.model.rabbitmap import RabbitMapping

MAPPING = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
TASK = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
NODES = [{"type": "node", "count": 1, "with": [TASK]}]
DW = {"dw": "#DW jobdw type=xfs capacity=1GiB name=scratch"}


class Coral2Dws:
    """Answers every request with ``answer`` and remembers what it got."""

    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.answer = answer or {"success": True}
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, topic: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.requests.append((topic, payload))
        return self.answer


def manager(service: Coral2Dws | None, **options: Any) -> JobManager:
    return JobManager(MAPPING, service=service, **options)


def names(jm: JobManager, jobid: int) -> list[str]:
    return [e.name for e in jm.job(jobid).eventlog]


def test_a_dw_job_is_held_on_dws_create_and_dws_create_is_sent() -> None:
    service = Coral2Dws()
    jm = manager(service)
    jobid = jm.submit(NODES, system=DW | {"dw_failure_tolerance": 2})
    assert jm.job(jobid).state == "DEPEND"
    assert names(jm, jobid)[-1] == "dependency-add"
    [(topic, payload)] = service.requests
    assert topic == "dws.create"
    assert payload == {
        "dw_directives": DW["dw"],
        "jobid": jobid,
        "resources": NODES,
        "userid": 1001,
        "failure_tolerance": 2,
    }


def test_resource_update_combines_constraints_and_releases_the_dependency() -> None:
    jm = manager(Coral2Dws())
    system = DW | {"constraints": {"properties": ["foo"]}, "allow_rabbits": True}
    jobid = jm.submit(NODES, system=system)
    exclude = {"not": [{"properties": ["badrabbit"]}]}
    new = [{"type": "slot", "count": 1, "label": "rabbit", "with": NODES}]
    jm.rpc("job-manager.dws.resource-update", {"id": jobid, "resources": new, "exclude": exclude})
    job = jm.job(jobid)
    assert job.system["constraints"] == {
        "or": [{"properties": ["rabbit"]}, {"and": [{"properties": ["foo"]}, exclude]}]
    }
    assert job.jobspec["resources"] == new
    assert "dws-create" not in job.dependencies
    assert job.state == "SCHED"


def test_resource_update_with_errmsg_raises_a_dws_exception_and_succeeds() -> None:
    jm = manager(Coral2Dws())
    jobid = jm.submit(NODES, system=DW)
    jm.rpc(
        "job-manager.dws.resource-update",
        {"id": jobid, "resources": NODES, "exclude": None, "errmsg": "'too big'"},
    )
    [exc] = jm.job(jobid).exceptions
    assert (exc["type"], exc["severity"]) == ("dws", 0)
    assert exc["note"] == "DWS workflow interactions failed: 'too big'"


def test_resource_update_for_a_job_not_in_depend_is_an_error() -> None:
    jm = manager(Coral2Dws())
    jobid = jm.submit(NODES)  # no #DW: straight through DEPEND
    with pytest.raises(FluxError, match=r"^job not found in depend state$"):
        jm.rpc("job-manager.dws.resource-update", {"id": jobid, "resources": [], "exclude": None})


def test_a_malformed_resource_update_raises_an_exception_naming_it() -> None:
    jm = manager(Coral2Dws())
    jobid = jm.submit(NODES, system=DW)
    with pytest.raises(FluxError, match=r"received malformed dws\.resource-update RPC"):
        jm.rpc("job-manager.dws.resource-update", {"id": jobid, "resources": NODES})
    [exc] = jm.job(jobid).exceptions
    assert exc["note"].endswith("received malformed dws.resource-update RPC")


def test_epilog_remove_needs_the_job_in_cleanup() -> None:
    jm = manager(Coral2Dws())
    jobid = jm.submit(NODES, system=DW)
    with pytest.raises(FluxError, match=r"^job not found in CLEANUP state$"):
        jm.rpc("job-manager.dws.epilog-remove", {"id": jobid})


def test_a_failed_create_answer_becomes_a_dws_create_exception() -> None:
    jm = manager(Coral2Dws({"success": False, "errstr": "nope"}))
    jobid = jm.submit(NODES, system=DW)
    exc, epilog = jm.job(jobid).exceptions  # the epilog's dws.post_run is refused too
    assert epilog["type"] == "dws-epilog"
    assert (exc["type"], exc["note"]) == ("dws-create", "DWS workflow interactions failed: nope")


def test_without_the_dws_service_the_job_fails_with_the_enosys_note() -> None:
    jm = manager(None)
    jobid = jm.submit(NODES, system=DW)
    exc, epilog = jm.job(jobid).exceptions  # then dws.post_run cannot be sent either
    assert epilog["note"].endswith("Failed to send dws.post_run RPC")
    assert "Admins: is the flux-coral2-dws service loaded?" in exc["note"]


def test_an_exception_during_the_epilog_sends_teardown_and_the_timeout_sends_abort() -> None:
    service = Coral2Dws()
    jm = manager(service)
    jobid = jm.submit(NODES, system=DW)
    jm.cancel(jobid)  # DEPEND → CLEANUP: epilog starts with run_started=false
    assert ("dws.post_run", {"jobid": jobid, "run_started": False}) in service.requests
    jm.raise_exception(jobid, "other", 0, "boom")
    assert service.requests[-1] == ("dws.teardown", {"jobid": jobid})
    assert jm.job(jobid).state == "CLEANUP"  # still waiting for epilog-remove
    jm.raise_exception(jobid, "dws-epilog-timeout", 0, "DWS epilog timed out")
    assert service.requests[-1] == ("dws.abort", {"jobid": jobid})
    finish = [e for e in jm.job(jobid).eventlog if e.name == "epilog-finish"]
    assert finish[-1].context == {"description": "dws-epilog", "status": 1}
    assert jm.job(jobid).state == "INACTIVE"


def test_a_post_run_nothing_serves_gives_the_epilog_up_in_the_plugins_words() -> None:
    jm = manager(Coral2Dws())
    jobid = jm.submit(NODES, system=DW)
    jm.jobtap.service = None  # the service went away (the bridge down, Flux restarting)
    jm.cancel(jobid)  # DEPEND → CLEANUP: the epilog sends dws.post_run
    [_, exc] = jm.job(jobid).exceptions
    note = "DWS workflow interactions failed: Failed to send dws.post_run RPC"
    assert (exc["type"], exc["note"]) == ("dws-epilog", note)
    finish = [e for e in jm.job(jobid).eventlog if e.name == "epilog-finish"]
    assert finish[-1].context == {"description": "dws-epilog", "status": 1}


def test_a_create_answer_that_cannot_be_read_fails_the_job_in_the_plugins_words() -> None:
    jm = manager(Coral2Dws({"unexpected": True}))
    jobid = jm.submit(NODES, system=DW)
    exc = jm.job(jobid).exceptions[0]
    assert exc["note"] == "DWS workflow interactions failed: Failed to unpack dws.create RPC"
