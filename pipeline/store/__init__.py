"""Redis store: job records, marks, locks, deadlines, the outbox, the ledger, the VNI pool,
the release verdicts.

Every key lives under ``pipeline.key_prefix`` (:class:`~pipeline.store.keys.Keys`).
redis-py errors are translated into :class:`~pipeline.errors.StoreUnavailable`
here, at the store's boundary.
"""

from __future__ import annotations

import importlib
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import redis

from pipeline.store.answers import NodeAnswers
from pipeline.store.connection import connect, store_errors
from pipeline.store.deadletters import DeadLetters
from pipeline.store.deadlines import Deadline, Deadlines
from pipeline.store.expected import ExpectedNodeWorkers
from pipeline.store.fabric import FabricState
from pipeline.store.fluxjobs import FluxJobs
from pipeline.store.keys import Keys
from pipeline.store.ledger import Entry, Ledger
from pipeline.store.marks import Holding, JobLocks, Marks
from pipeline.store.metrics import Metrics
from pipeline.store.outbox import Delivery, Outbox, OutboxMessage, Seal
from pipeline.store.releases import Releases, Verdict
from pipeline.store.resource_log import ResourceLog
from pipeline.store.resync import ResyncDue
from pipeline.store.runs import TaskRuns
from pipeline.store.systemstatus import SystemStatusSync
from pipeline.store.timeline import Timeline
from pipeline.store.vnipool import VniPool
from pipeline.store.watch import Checkpoint, WatchState
from pipeline.store.workers import Workers

if TYPE_CHECKING:
    from pipeline.model.job import JobRecord
    from pipeline.store.jobs import JobStore
    from pipeline.store.tally import Counted, Tally
    from pipeline.store.told import RabbitsTold

#: The parts whose modules build pydantic models or many dataclasses, imported when first
#: used: a process that only sends (a hook, a prolog) never pays for them.
_LAZY = {
    "JobRecord": "pipeline.model.job",
    "JobStore": "pipeline.store.jobs",
    "Counted": "pipeline.store.tally",
    "Tally": "pipeline.store.tally",
    "RabbitsTold": "pipeline.store.told",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Checkpoint",
    "Counted",
    "DeadLetters",
    "Deadline",
    "Deadlines",
    "Delivery",
    "Entry",
    "FabricState",
    "FluxJobs",
    "Holding",
    "JobLocks",
    "JobRecord",
    "JobStore",
    "Keys",
    "Ledger",
    "Marks",
    "Metrics",
    "Outbox",
    "OutboxMessage",
    "RabbitsTold",
    "Releases",
    "ResourceLog",
    "ResyncDue",
    "Store",
    "SystemStatusSync",
    "Tally",
    "TaskRuns",
    "Timeline",
    "Verdict",
    "VniPool",
    "WatchState",
    "connect",
]


@dataclass(frozen=True)
class Store:
    """Every part of the store over one Redis client.

    Each part is made once per Store: the parts hold state a process must
    have only one of (the registered Lua scripts; :class:`JobLocks`'s
    lock-keeper thread and the set of locks it renews).
    """

    client: redis.Redis
    keys: Keys
    #: signs the outbox entries this process appends, checks those it reads
    seal: Seal | None = None

    @classmethod
    def from_url(cls, url: str, prefix: str, seal: Seal | None = None) -> Store:
        """Connect to ``url`` with key prefix ``prefix``."""
        return cls(connect(url), Keys(prefix), seal)

    @cached_property
    def dead_letters(self) -> DeadLetters:
        """Messages set aside: no process could decode or deliver them."""
        return DeadLetters(self.client, self.keys.prefix)

    @cached_property
    def expected_node_workers(self) -> ExpectedNodeWorkers:
        """The computes whose node workers the lifecycle workers expect."""
        return ExpectedNodeWorkers(self.client, self.keys)

    @cached_property
    def timeline(self) -> Timeline:
        """Each job's timeline (``coral2-pipeline job show``)."""
        return Timeline(self.client, self.keys)

    @cached_property
    def metrics(self) -> Metrics:
        """Counters every process adds to: transitions, failures."""
        return Metrics(self.client, self.keys)

    @cached_property
    def jobs(self) -> JobStore:
        """Job records."""
        from pipeline.store.jobs import JobStore  # see _LAZY

        return JobStore(self.client, self.keys)

    @cached_property
    def marks(self) -> Marks:
        """One-shot marks."""
        return Marks(self.client, self.keys)

    @cached_property
    def locks(self) -> JobLocks:
        """Per-job locks."""
        return JobLocks(self.client, self.keys)

    @cached_property
    def deadlines(self) -> Deadlines:
        """The deadline set."""
        return Deadlines(self.client, self.keys)

    @cached_property
    def ledger(self) -> Ledger:
        """The ledger of sent task messages without an outcome."""
        return Ledger(self.client, self.keys)

    @cached_property
    def outbox(self) -> Outbox:
        """The outbox stream."""
        return Outbox(self.client, self.keys, self.seal)

    @cached_property
    def resource_log(self) -> ResourceLog:
        """The RFC 44 resource eventlog and journal."""
        return ResourceLog(self.client, self.keys)

    @cached_property
    def told(self) -> RabbitsTold:
        """What Flux was last told of each rabbit."""
        from pipeline.store.told import RabbitsTold  # see _LAZY

        return RabbitsTold(self.client, self.keys, self.outbox)

    @cached_property
    def systemstatus(self) -> SystemStatusSync:
        """The SystemStatus sync's position and memory."""
        return SystemStatusSync(self.client, self.keys)

    @cached_property
    def flux_jobs(self) -> FluxJobs:
        """Which jobs Flux runs, as the bridge reads them."""
        return FluxJobs(self.client, self.keys)

    @cached_property
    def fabric(self) -> FabricState:
        """The fabric manager's recent health."""
        return FabricState(self.client, self.keys)

    @cached_property
    def runs(self) -> TaskRuns:
        """The run bookkeeping of task messages (starts, lock, ledger, failures)."""
        return TaskRuns(self.client, self.keys, self.jobs, self.locks, self.ledger)

    @cached_property
    def watch(self) -> WatchState:
        """The watcher's lease and positions, per-job event notes, rabbits' health."""
        return WatchState(self.client, self.keys)

    @cached_property
    def resync(self) -> ResyncDue:
        """The jobs ``dws.resync`` looks at next, and when."""
        return ResyncDue(self.client, self.keys)

    @cached_property
    def vnipool(self) -> VniPool:
        """The VNI pool."""
        return VniPool(self.client, self.keys)

    @cached_property
    def tally(self) -> Tally:
        """Node answers, counted without the job's lock."""
        from pipeline.store.tally import Tally  # see _LAZY

        return Tally(self.client, self.keys)

    @cached_property
    def workers(self) -> Workers:
        """The Celery workers' heartbeats (a dead one's messages are sent again at once)."""
        return Workers(self.client, self.keys)

    @cached_property
    def answers(self) -> NodeAnswers:
        """Each node's answers stream, read by one lifecycle worker in batches."""
        return NodeAnswers(self.client, self.keys)

    @cached_property
    def releases(self) -> Releases:
        """Verdicts on jobs held in the job-manager prolog."""
        return Releases(self.client, self.keys)

    def exceptions_on_their_way(self, jobid: int) -> list[str]:
        """The outbox entries of the job's exceptions not yet delivered to Flux: a
        failed job's held prolog waits for them, since the first to land cancels it
        with the pipeline's own reason."""
        sent = self.marks.sent(jobid, "exception:")
        return self.outbox.undelivered(sorted(sent.values()))

    def generation(self) -> str | None:
        """What changes whenever Redis may hold less than it did: its ``run_id``, new at
        every start of the server (a crash of its host loses its last writes), and the
        store's epoch, a key the first process to ask writes and that is gone only with
        the data (a Redis emptied or replaced). None when Redis gives no run_id."""
        fresh = f"{uuid.uuid4().hex} {time.time():.0f}"
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.info("server")
            pipe.set(self.keys.epoch, fresh, nx=True)
            pipe.get(self.keys.epoch)
            info, _, epoch = pipe.execute()
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        run = info.get("run_id") if isinstance(info, dict) else None
        if not run or epoch is None:
            return None
        return f"{run} {epoch.decode() if isinstance(epoch, bytes) else epoch}"

    def renew_generation(self) -> None:
        """Drop the store's epoch: the next :meth:`generation` writes a new one, and every
        process that looks (the bridge, the watcher) rebuilds from Flux and DWS as after a
        loss (``coral2-pipeline recover``)."""
        try:
            self.client.delete(self.keys.epoch)
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    def close(self) -> None:
        """Close the Redis connections (a command-line tool that is done)."""
        self.client.close()
