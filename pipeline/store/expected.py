"""The computes whose node workers the pipeline expects, as its lifecycle workers know them.

A lifecycle worker whose settings give the node workers work (CXI services, clientmounts)
writes the computes of its rabbit mapping here as it starts; ``coral2-pipeline status``
reads them, so that its node-worker check does not depend on the monitoring host's
settings naming the mapping and the node work as the workers' do.
"""

from __future__ import annotations

import time
from typing import Any

import redis

from pipeline.model.hostlist import encode_hostlist, expand_hostlist
from pipeline.store.connection import translated
from pipeline.store.keys import Keys


@translated
class ExpectedNodeWorkers:
    """``<prefix>:node-workers-expected``: a hash of ``computes`` (a hostlist) and ``at``."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.key = client, keys.node_workers_expected

    def publish(self, computes: list[str] | None) -> None:
        """Note the computes expected to run a node worker (None: none are)."""
        if not computes:
            self.client.delete(self.key)
            return
        fields = {"computes": encode_hostlist(computes), "at": f"{time.time():.0f}"}
        self.client.hset(self.key, mapping=fields)  # type: ignore[arg-type]

    def read(self) -> list[str] | None:
        """The computes the workers expect to run a node worker (None: none noted)."""
        raw: Any = self.client.hget(self.key, "computes")
        return expand_hostlist(raw.decode()) if raw else None
