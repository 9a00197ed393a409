"""A Flux endpoint that takes every request and keeps it, for the delivery tests."""

from __future__ import annotations

from typing import Any


class RecordingFlux:
    """Answers every RPC with ``{}``; ``rpcs`` lists them in order (a KVS put as ``kvs``)."""

    def __init__(self) -> None:
        self.rpcs: list[tuple[str, dict[str, Any]]] = []

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        self.rpcs.append((topic, payload))
        return {}

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        self.rpcs.append(("kvs", {"id": jobid, key: value}))
