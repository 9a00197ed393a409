"""Run inside a Flux instance whose job-manager prolog (flux-core's ``perilog.so``,
``[job-manager.prolog] command``, on rank 0 as the conf.d file we ship sets it) runs a
script that exits with the status written in the file ``CODE`` (``hang``: it sleeps until
killed) — ``flux start ... python3 perilog_answers.py CASES.json CODE``. For each case,
write its status, submit a one-node job (``cancel``: cancel it once its prolog started),
and print, as one JSON list, the job's exceptions and its eventlog's names (with the
description and status of prolog events) per case."""

from __future__ import annotations

import json
import sys
from typing import Any

import flux  # type: ignore[import-not-found]
import flux.job  # type: ignore[import-not-found]


def run(handle: Any, case: dict[str, Any], code_file: str) -> dict[str, Any]:
    with open(code_file, "w") as out:
        out.write("hang" if case.get("cancel") else str(case["exit"]))
    spec = flux.job.JobspecV1.from_command(["true"], num_nodes=1)
    spec.setattr("system.duration", 600)
    jobid = flux.job.submit(handle, spec, waitable=True)
    exceptions, names = [], []
    for event in flux.job.event_watch(handle, jobid):
        context = event.context or {}
        if event.name == "prolog-start" and case.get("cancel"):
            flux.job.cancel(handle, jobid)
        if event.name == "exception":
            exceptions.append({k: context[k] for k in ("type", "severity", "note")})
        shown = event.name
        if "description" in context:
            shown += f" {context['description']}"
        if "status" in context and event.name.endswith("-finish"):
            shown += f" status={context['status']}"
        names.append(shown)
        if event.name == "clean":
            break
    flux.job.wait(handle, jobid)
    return {"exceptions": exceptions, "events": names}


def main() -> None:
    cases = json.loads(open(sys.argv[1]).read())  # noqa: SIM115
    handle = flux.Flux()
    print(json.dumps([run(handle, case, sys.argv[2]) for case in cases]))


if __name__ == "__main__":
    main()
