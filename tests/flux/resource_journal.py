"""Run inside a Flux instance (``flux start ... python3 resource_journal.py REQUESTS.json``):
send each ``[topic, payload]`` of the file to rank 0, then stream ``resource.journal``
until its sentinel and print, as one JSON list, every response. Uses the instance's own
Python bindings (Debian's python3 with PYTHONPATH at the flux-core prefix)."""

from __future__ import annotations

import json
import sys

import flux  # type: ignore[import-not-found]
from flux.constants import FLUX_RPC_STREAMING  # type: ignore[import-not-found]


def main() -> None:
    requests = json.loads(open(sys.argv[1]).read())  # noqa: SIM115
    handle = flux.Flux()
    for topic, payload in requests:
        handle.rpc(topic, payload, nodeid=0).get()
    future = handle.rpc("resource.journal", {}, nodeid=0, flags=FLUX_RPC_STREAMING)
    responses = []
    while True:
        response = future.get()
        future.reset()
        responses.append(response)
        if not response["events"]:
            break
    print(json.dumps(responses))


if __name__ == "__main__":
    main()
