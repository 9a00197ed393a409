"""Many compute nodes in one light process, for benchmarks of a whole machine's fan-out.

On a machine each compute node runs its own node worker, listening on one
queue. A single Celery node worker serving thousands of simulated nodes
(the demo's) names every queue in each ``BRPOP``, so each fetch costs time
in proportion to the node count: past a thousand nodes a fan-out benchmark
measures that, not the pipeline. :class:`NodeEmulator` serves its nodes'
queues with one pipelined ``RPOP`` per queue a sweep instead, and runs each
message through the node worker's own code: the same Celery app
(:class:`node_worker.app.NodeWorker`), the same refusal of anything whose
signature or claim does not hold (:func:`pipeline.platform.signing.refusal`),
the same tasks on simulated Cassini NICs, the same answers signed with each
node's key.

With ``hold`` (a number of messages), the emulator waits until that many are
in its nodes' queues (a job on that many of its nodes), does all the nodes'
work, then hands their answers to the answers stream in one step: the
pipeline's sending and its counting of the answers are then timed apart from
the node side, which on a machine runs on every node at once and here shares
the benchmark's cores. The times are written
to ``times`` as JSON (``sent``, ``answered``: wall-clock seconds).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from coral2_sim.node.cassini import SimulatedNic
from coral2_sim.node.service import SimulatedService
from node_worker.app import NodeWorker
from node_worker.ended import EndedJobs
from pipeline.platform.answers import answers_key
from pipeline.platform.signing import CLAIM, manifest_host, refusal
from pipeline.settings import Settings

log = logging.getLogger("coral2_coral2_sim.emulator")

#: How many queues one pipelined sweep reads.
SWEEP = 2048
#: How long an empty sweep waits before the next (s).
IDLE_S = 0.005

#: Hand every held answer to the answers stream, oldest first, in one step.
_HAND_OVER = """
local entries = redis.call('xrange', KEYS[1], '-', '+')
for _, entry in ipairs(entries) do
  local fields, node = entry[2], ''
  for i = 1, #fields, 2 do if fields[i] == 'node' then node = fields[i + 1] end end
  redis.call('xadd', ARGV[1] .. node, '*', unpack(fields))
end
redis.call('del', KEYS[1])
return #entries
"""


class NodeEmulator:
    """Serve ``hosts``' node queues in this process (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        hosts: list[str],
        state: Path,
        *,
        hold: int = 0,
        times: Path | None = None,
    ) -> None:
        self.hosts = hosts
        self.hold = hold
        self.times = times
        self.answers = answers_key(settings.pipeline, "")  # each node's, by its name
        self.held = f"{settings.pipeline.key_prefix}:answers-held"
        nics: dict[str, SimulatedNic] = {}
        lock = threading.Lock()

        def nic_of(host: str) -> SimulatedNic:
            with lock:
                if host not in nics:
                    nics[host] = SimulatedNic(state=state / "nics" / f"{host}.json")
                return nics[host]

        service = SimulatedService(state_file=state / "clientmount-services.json")
        # with ``hold`` the answers wait on a stream of their own until every node has worked
        self.worker = NodeWorker(
            settings,
            hosts,
            service,
            nic_of=nic_of,
            ended=EndedJobs(state),
            answers_to=self.held if hold else None,
        )
        self.app = self.worker.app
        self.queues = list(self.worker.queues)
        self._stop = threading.Event()

    def stop(self) -> None:
        """End :meth:`serve` after its current sweep."""
        self._stop.set()

    def serve(self) -> None:
        """Take and run messages until :meth:`stop`, beating for every node served."""
        heartbeat = self.worker.heartbeat().start()
        try:
            self._serve()
        finally:
            heartbeat.stop()

    def _serve(self) -> None:
        with self.app.connection_for_read() as connection:
            channel: Any = connection.default_channel
            client = channel.client
            while not self._stop.is_set():
                if self.hold:
                    self._held_round(channel, client)
                elif not self._sweep(channel, client):
                    time.sleep(IDLE_S)

    def _sweep(self, channel: Any, client: Any) -> int:
        """One ``RPOP`` of every queue, pipelined; run what came. Returns how many."""
        taken = 0
        for start in range(0, len(self.queues), SWEEP):
            names = self.queues[start : start + SWEEP]
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.rpop(name)
            for name, raw in zip(names, pipe.execute(), strict=True):
                if raw is not None:
                    self._run(channel, name, raw)
                    taken += 1
        return taken

    def _held_round(self, channel: Any, client: Any) -> None:
        """Wait for ``hold`` messages, run them all, then hand the answers over."""
        while not self._stop.is_set():
            pipe = client.pipeline(transaction=False)
            for name in self.queues:
                pipe.llen(name)
            if sum(pipe.execute()) >= self.hold:
                break
            time.sleep(IDLE_S)
        else:
            return
        sent = time.time()
        while self._sweep(channel, client):
            pass
        if self.times is not None:  # before the answers go: the job may end at once
            written = self.times.with_suffix(".new")  # whole, never read half-written
            written.write_text(json.dumps({"sent": sent, "answered": time.time()}))
            written.replace(self.times)
        moved = client.register_script(_HAND_OVER)(keys=[self.held], args=[self.answers])
        log.info("%d answers handed over", moved)

    def _run(self, channel: Any, queue: str, raw: bytes) -> None:
        message = channel.message_to_python(json.loads(raw))
        why = refusal(message)
        if why is not None:
            log.error("message on %s refused: %s", queue, why)
            return
        args, kwargs, embed = message.decode()
        name = message.headers.get("task")
        task_id = message.headers.get("id")
        if "hostname" not in kwargs:  # a copy of a manifest: its id names the node
            kwargs = {**kwargs, "hostname": manifest_host(task_id, embed.get(CLAIM)) or ""}
        task = self.app.tasks.get(name)
        if task is None:
            log.error("message on %s: no node task %r", queue, name)
            return
        result = task.apply(args, kwargs, task_id=task_id)
        if result.failed():
            log.error("%s on %s failed: %s", name, queue, result.result)
