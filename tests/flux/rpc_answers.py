"""Run inside a Flux instance (``flux start ... python3 rpc_answers.py REQUESTS.json``):
send each ``[topic, payload]`` of the file to rank 0 and print, as one JSON list, what
Flux answered — ``{"ok": payload}`` or ``{"error": its text}``. Uses the instance's own
Python bindings (Debian's python3 with PYTHONPATH at the flux-core prefix)."""

from __future__ import annotations

import json
import sys

import flux  # type: ignore[import-not-found]


def main() -> None:
    requests = json.loads(open(sys.argv[1]).read())  # noqa: SIM115
    handle = flux.Flux()
    answers = []
    for topic, payload in requests:
        try:
            answers.append({"ok": handle.rpc(topic, payload, nodeid=0).get()})
        except OSError as exc:
            answers.append({"error": exc.strerror or str(exc)})
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
