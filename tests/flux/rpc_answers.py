"""Run inside a Flux instance (``flux start ... python3 rpc_answers.py REQUESTS.json``):
send each ``[topic, payload]`` of the file to rank 0 and print, as one JSON list, what
Flux answered — ``{"ok": payload}`` or ``{"error": its text}``. An ``id`` of ``"$JOB"``
names a one-node job this script submits first and Flux holds in SCHED (urgency 0).
Uses the instance's own Python bindings (PYTHONPATH at flux-core's site-packages)."""

from __future__ import annotations

import json
import sys

import flux  # type: ignore[import-not-found]
import flux.job  # type: ignore[import-not-found]


def main() -> None:
    requests = json.loads(open(sys.argv[1]).read())  # noqa: SIM115
    handle = flux.Flux()
    held = None
    answers = []
    for topic, asked in requests:
        payload = asked
        if asked.get("id") == "$JOB":
            if held is None:
                spec = flux.job.JobspecV1.from_command(["true"], num_nodes=1)
                spec.setattr("system.duration", 600)
                held = flux.job.submit(handle, spec, urgency=0)
            payload = dict(asked, id=held)
        try:
            answers.append({"ok": handle.rpc(topic, payload, nodeid=0).get()})
        except OSError as exc:
            answers.append({"error": exc.strerror or str(exc)})
    if held is not None:
        flux.job.cancel(handle, held)
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
