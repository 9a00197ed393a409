"""The simulated job manager answers as the real Flux answered when ``make record-flux``
asked it (``tests/flux/recorded/``, each file naming the flux-core, Fluxion and
flux-coral2 releases and the date): every request the bridge sends, drains and undrains,
the truncated resource journal, dws-jobtap's requests, exceptions and eventlogs with and
without a ``dws`` service, and perilog's job-manager prolog. Every request the bridge can
send has a recording."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.flux.jobmanager import JobManager

from pipeline.errors import FluxError
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.services.bridge.delivery import RPC_TOPICS
from pipeline.services.bridge.resources import ResourceMirror
from pipeline.store import Store
from tests.flux.checks import HOSTS, JOB, TIER_MAPPING
from tests.flux.record import CHECKS

RECORDED = Path(__file__).parents[2] / "flux" / "recorded"
TASK = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
ONE_NODE = [{"type": "node", "count": 1, "with": [TASK]}]
DW = "#DW jobdw type=xfs capacity=1GiB name=scratch"
#: what the bridge reads from Flux besides its RPCs (the streams it follows)
STREAMS = {"resource.journal"}


def recording(check: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED / f"{check}.json").read_text())
    return data


def alike(answer: dict[str, Any]) -> dict[str, Any]:
    """A recorded answer, an empty payload shown as none (the bridge reads neither)."""
    return {"ok": answer["ok"] or None} if "ok" in answer else answer


def answer_of(jm: JobManager, topic: str, payload: dict[str, Any]) -> dict[str, Any]:
    """What the simulated job manager answered, as the recorder writes the real one's
    (an empty payload and none alike: the bridge reads neither)."""
    try:
        return {"ok": jm.rpc(topic, copy.deepcopy(payload)) or None}
    except FluxError as exc:
        return {"error": str(exc)}


def test_every_recording_names_its_flux_releases_and_date() -> None:
    for check in CHECKS:
        data = recording(check)
        assert set(data["versions"]) == {"flux-core", "flux-sched", "flux-coral2"}, check
        assert all(v[0].isdigit() for v in data["versions"].values()), data["versions"]
        assert data["recorded"][:2] == "20", check


def test_every_request_the_bridge_can_send_has_a_recording() -> None:
    recorded = {
        exchange["topic"]
        for check in ("bridge-requests", "drains")
        for exchange in recording(check)["exchanges"]
    }
    recorded |= {topic for topic, _ in recording("resource-journal")["requests"]}
    recorded |= {"resource.journal"}
    assert set(RPC_TOPICS.values()) | STREAMS <= recorded, set(RPC_TOPICS.values()) - recorded


@pytest.mark.parametrize("check", ["bridge-requests", "drains"])
def test_each_recorded_request_gets_the_recorded_answer(check: str) -> None:
    mapping = (
        TIER_MAPPING
        if check == "bridge-requests"
        else RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
    )
    jm = JobManager(mapping, ssd_chunks=4)
    held = jm.submit(ONE_NODE)  # never stepped: it waits in SCHED, as urgency 0 holds it
    exchanges = recording(check)["exchanges"]
    got = []
    for exchange in exchanges:
        payload = dict(exchange["payload"])
        if payload.get("id") == JOB:
            payload["id"] = held
        got.append(
            {"topic": exchange["topic"], "answer": answer_of(jm, exchange["topic"], payload)}
        )
    assert got == [{"topic": e["topic"], "answer": alike(e["answer"])} for e in exchanges]


def test_the_resource_journal_streams_a_truncate_then_the_newest(store: Store) -> None:
    data = recording("resource-journal")
    jm = JobManager(
        RabbitMapping.load(sample_path("sample-rabbitmapping.json")), eventlog=store.resource_log
    )
    jm.resource.start()  # restart, resource-define, online: as the real one posts them
    for topic, payload in data["requests"]:
        jm.rpc(topic, dict(payload))
    simulated = []
    for response in store.resource_log.journal(journal_max=data["journal_max"]):
        simulated.append(response)
        if not response["events"]:
            break
    assert shape(simulated) == shape(data["responses"])


def shape(responses: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Each event's name and the keys it has, each drain's or undrain's nodelist."""
    out = []
    for response in responses:
        for event in response["events"]:
            context = event.get("context", {})
            out.append((event["name"], *sorted(event), context.get("nodelist", "")))
    return out


class ScriptedDws:
    """The ``dws`` service as the recorder scripted it: each request answered as the case
    says, a successful one followed by coral2_dws's next request to the job manager."""

    FOLLOW_UP: ClassVar[dict[str, str]] = {
        "dws.create": "job-manager.dws.resource-update",
        "dws.setup": "job-manager.dws.prolog-remove",
        "dws.post_run": "job-manager.dws.epilog-remove",
    }

    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script
        self.requests: list[list[Any]] = []
        self.pending: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, topic: str, payload: dict[str, Any]) -> dict[str, Any]:
        shown = {k: v for k, v in payload.items() if k not in ("jobid", "R")}
        self.requests.append([topic, shown])
        answer: dict[str, Any] = self.script.get(topic.removeprefix("dws."), {"success": True})
        if answer == {"success": True} and topic in self.FOLLOW_UP:
            request: dict[str, Any] = {"id": payload["jobid"]}
            if topic == "dws.create":
                request |= {"resources": payload["resources"], "exclude": None}
            elif topic == "dws.setup":
                request |= {"variables": {}}
            self.pending.append((self.FOLLOW_UP[topic], request))
        return answer


def events_of(jm: JobManager, jobid: int, *, status: bool = True) -> list[str]:
    """The job's eventlog as the recorders write it: names, prolog and epilog events
    with their description (and, with ``status``, a prolog's status)."""
    out = []
    for event in jm.job(jobid).eventlog:
        context = event.context or {}
        shown = event.name
        if "description" in context:
            shown += f" {context['description']}"
        if status and "status" in context and event.name == "prolog-finish":
            shown += f" status={context['status']}"
        out.append(shown)
    return out


def drive(jm: JobManager, jobid: int, service: ScriptedDws | None = None) -> None:
    """Step the job manager, sending the service's follow-ups, until the job is over."""
    for _ in range(10_000):
        while service is not None and service.pending:
            jm.rpc(*service.pending.pop(0))
        if jm.job(jobid).state == "INACTIVE":
            return
        jm.step()
    raise AssertionError(f"job {jobid} never ended: {events_of(jm, jobid)}")


@pytest.mark.parametrize("case", recording("dws-jobtap")["cases"], ids=lambda c: str(c["script"]))
def test_dws_jobtap_sends_raises_and_posts_as_recorded(case: dict[str, Any]) -> None:
    script = case["script"]
    service = None if script.get("service") is False else ScriptedDws(script)
    jm = JobManager(TIER_MAPPING, service=service)
    jobid = jm.submit(ONE_NODE, userid=0, runtime_s=0.0, system={"dw": DW})
    drive(jm, jobid, service)
    exceptions = [{k: e[k] for k in ("type", "severity", "note")} for e in jm.job(jobid).exceptions]
    assert exceptions == case["exceptions"]
    assert (service.requests if service else []) == case["requests"]
    assert events_of(jm, jobid, status=False) == case["events"]


class ScriptedProlog:
    """The job-manager prolog's exit status, as the recorder's script gave it."""

    def __init__(self, status: int | None) -> None:
        self.exit = status

    def status(self, jobid: int) -> int | None:
        return self.exit

    def forget(self, jobid: int) -> None:
        """Nothing to forget."""


@pytest.mark.parametrize("case", recording("perilog")["cases"], ids=lambda c: str(c["script"]))
def test_the_job_manager_prolog_ends_as_perilog_ends_it(case: dict[str, Any]) -> None:
    script = case["script"]
    hold = ScriptedProlog(None if script.get("cancel") else script["exit"])
    jm = JobManager(TIER_MAPPING, hold=hold)
    jobid = jm.submit(ONE_NODE, userid=0, runtime_s=0.0)
    if script.get("cancel"):
        while "prolog-start job-manager.prolog" not in events_of(jm, jobid):
            jm.step()
        jm.cancel(jobid)
    drive(jm, jobid)
    exceptions = [{k: e[k] for k in ("type", "severity", "note")} for e in jm.job(jobid).exceptions]
    assert exceptions == case["exceptions"]
    assert events_of(jm, jobid) == case["events"]


def test_the_bridge_mirrors_the_recorded_truncate_as_a_gap(store: Store) -> None:
    mirror = ResourceMirror(store.resource_log, hostlist=HOSTS)
    for response in recording("resource-journal")["responses"]:
        mirror.feed(response)
    events = store.resource_log.events()
    assert [e["name"] for e in events] == ["truncate", "drain", "undrain", "undrain"]
    assert events[0]["context"] == {"nodelist": HOSTS}
