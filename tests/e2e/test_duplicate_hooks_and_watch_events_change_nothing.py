"""Hooks and watch events delivered twice change nothing observable."""

from __future__ import annotations

import time

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes, rpcs


def test_repeated_hooks_and_observes_send_each_flux_message_once(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None and system.hooks is not None and system.app is not None
    flux, hooks, app = system.flux, system.hooks, system.app
    dw = "#DW jobdw type=gfs2 capacity=8GiB name=shared"
    jobid = flux.submit(nodes(2), system={"dw": dw}, runtime_s=0.5)
    create = {
        "jobid": jobid,
        "userid": 1001,
        "dw_directives": dw,
        "resources": nodes(2),
        "failure_tolerance": 0,
    }
    seen: set[str] = set()
    deadline = time.monotonic() + 300  # a hang guard: a machine busy with other work is waited for
    while flux.job(jobid).state != "INACTIVE":
        assert time.monotonic() < deadline, flux.job(jobid).eventlog
        job = flux.job(jobid)
        for event in job.events():
            if event.name in seen:
                continue
            seen.add(event.name)
            # what a duplicate delivery of the hook that led here, or of a watch event, does
            app.send_task("dws.observe", kwargs={"jobid": jobid})
            if event.name == "memo":
                assert hooks.dispatch("dws.create", create) == {"success": True}
            if event.name == "prolog-start" and "R" in job.kvs:
                assert hooks.dispatch("dws.setup", {"jobid": jobid, "R": job.kvs["R"]}) == {
                    "success": True
                }
            if event.name == "epilog-start":
                payload = {"jobid": jobid, "run_started": True}
                assert hooks.dispatch("dws.post_run", payload) == {"success": True}
        time.sleep(0.01)
    job = flux.job(jobid)
    assert job.result == "COMPLETED", job.exceptions
    time.sleep(1.0)  # anything a late duplicate would still send
    for once in ("resource-update", "prolog-remove", "epilog-remove"):
        assert len(rpcs(system, f"job-manager.dws.{once}", jobid)) == 1, once
    assert len([e for e in job.eventlog if e.name == "dws_environment"]) == 1
