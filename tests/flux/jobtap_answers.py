"""Run inside a Flux instance with ``dws-jobtap.so`` loaded (``flux start ... python3
jobtap_answers.py CASES.json``): for each case, submit one ``#DW`` job and answer the
plugin's ``dws.*`` requests as the case scripts them — as flux-coral2's own t1000 tests
stand in for coral2_dws — and print, as one JSON list, per case: the ``dws.*`` requests the
plugin sent (topic and payload, ids and R left out), the job's exceptions, and its
eventlog's names (with the description of prolog and epilog events).

A case is ``{"service": false}`` (nothing serves ``dws``: the first case, before the
service is registered) or a mapping of ``create``, ``setup`` and ``post_run`` to the
answer to give (``{"success": true}`` when absent). After a successful ``create`` answer
the script sends ``job-manager.dws.resource-update`` with the job's own resources, after
``setup`` ``prolog-remove``, and after ``post_run`` ``epilog-remove``, as coral2_dws does
once the Workflow reaches each state."""

from __future__ import annotations

import json
import sys
from typing import Any

import flux  # type: ignore[import-not-found]
import flux.job  # type: ignore[import-not-found]
from flux.constants import FLUX_MSGTYPE_REQUEST  # type: ignore[import-not-found]

DW = "#DW jobdw type=xfs capacity=1GiB name=scratch"
OK = {"success": True}
FOLLOW_UP = {
    "create": "job-manager.dws.resource-update",
    "setup": "job-manager.dws.prolog-remove",
    "post_run": "job-manager.dws.epilog-remove",
}


class Case:
    """One job and the answers its requests get."""

    def __init__(self, handle: Any, script: dict[str, Any]) -> None:
        self.handle = handle
        self.script = script
        self.requests: list[list[Any]] = []
        self.jobid = 0

    def follow_up(self, name: str, payload: dict[str, Any]) -> None:
        topic = FOLLOW_UP.get(name)
        if topic is None:
            return
        request: dict[str, Any] = {"id": payload["jobid"]}
        if name == "create":
            request |= {"resources": payload["resources"], "exclude": None}
        elif name == "setup":
            request |= {"variables": {}}
        self.handle.rpc(topic, request).then(lambda future: None)

    def on_request(self, handle: Any, _watcher: Any, msg: Any, _arg: Any) -> None:
        name = msg.topic.split(".", 1)[1]
        payload = dict(msg.payload)
        shown = {k: v for k, v in payload.items() if k not in ("jobid", "R")}
        self.requests.append([msg.topic, shown])
        answer = self.script.get(name, OK)
        handle.respond(msg, answer)
        if answer == OK:
            self.follow_up(name, payload)


def run(handle: Any, script: dict[str, Any], watchers: list[Any]) -> dict[str, Any]:
    case = Case(handle, script)
    for watcher in watchers:
        watcher.callback = case.on_request
    spec = flux.job.JobspecV1.from_command(["true"], num_nodes=1)
    spec.setattr("system.dw", DW)
    spec.setattr("system.duration", 600)
    case.jobid = flux.job.submit(handle, spec, waitable=True)
    flux.job.wait_async(handle, case.jobid).then(lambda future: handle.reactor_stop())
    handle.reactor_run()
    exceptions, names = [], []
    for event in flux.job.event_watch(handle, case.jobid):
        context = event.context or {}
        if event.name == "exception":
            exceptions.append({k: context[k] for k in ("type", "severity", "note")})
        description = context.get("description")
        names.append(f"{event.name} {description}" if description else event.name)
        if event.name == "clean":
            break
    return {"requests": case.requests, "exceptions": exceptions, "events": names}


class Dispatch:
    """A message watcher's callback that can be pointed at each case in turn."""

    def __init__(self) -> None:
        self.callback: Any = None

    def __call__(self, handle: Any, watcher: Any, msg: Any, arg: Any) -> None:
        self.callback(handle, watcher, msg, arg)


def main() -> None:
    cases = json.loads(open(sys.argv[1]).read())  # noqa: SIM115
    handle = flux.Flux()
    dispatch: list[Any] = []
    out = []
    for script in cases:
        if script.get("service", True) and not dispatch:
            handle.service_register("dws").get()
            for method in ("create", "setup", "post_run", "teardown", "abort"):
                target = Dispatch()
                watcher = handle.msg_watcher_create(target, FLUX_MSGTYPE_REQUEST, f"dws.{method}")
                watcher.start()
                dispatch.append((target, watcher))
        out.append(run(handle, script, [target for target, _ in dispatch]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
