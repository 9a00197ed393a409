"""Every Redis key we write, under one prefix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
    """Key names for one deployment's ``key_prefix``."""

    prefix: str

    def job(self, jobid: int) -> str:
        """The job record (JSON)."""
        return f"{self.prefix}:job:{jobid}"

    def marks(self, jobid: int) -> str:
        """Hash of the job's one-shot marks (field = mark name, e.g. ``prolog-remove``)."""
        return f"{self.prefix}:sent:{jobid}"

    def lock(self, jobid: int) -> str:
        """The per-job lock."""
        return f"{self.prefix}:lock:{jobid}"

    @property
    def ledger_generation(self) -> str:
        """The store generation ``housekeeping.redeliver`` last ran in."""
        return f"{self.prefix}:ledger-generation"

    @property
    def epoch(self) -> str:
        """The store's epoch, written once (``SET NX``) and kept: gone only with the data."""
        return f"{self.prefix}:epoch"

    @property
    def flux_refusals(self) -> str:
        """Hash message kind → how many Flux refused, ever."""
        return f"{self.prefix}:flux-refusals"

    @property
    def node_workers_expected(self) -> str:
        """Hash of the computes the lifecycle workers expect node workers on, and when."""
        return f"{self.prefix}:node-workers-expected"

    def node_alive(self, host: str) -> str:
        """Node ``host``'s heartbeat (``node_worker.heartbeat``): set by its node worker
        alone, expiring unless set again."""
        return f"{self.prefix}:node-alive:{host}"

    @property
    def deadlines(self) -> str:
        """The deadline sorted set."""
        return f"{self.prefix}:deadlines"

    def deadlines_of(self, jobid: int) -> str:
        """Set of the job's members of the deadline set, whatever their tokens: how a
        deadline armed by a task killed before its record held the token is disarmed."""
        return f"{self.prefix}:deadlines-of:{jobid}"

    @property
    def sweep_clock(self) -> str:
        """The wall time (epoch s) the latest deadline sweep read: how a clock step is seen."""
        return f"{self.prefix}:deadlines:clock"

    @property
    def outbox(self) -> str:
        """The outbox stream of messages to Flux."""
        return f"{self.prefix}:outbox"

    def node_answers(self, host: str) -> str:
        """Node ``host``'s own stream of answers (``pipeline.store.answers``): the one key
        its Redis user may write, and only by appending."""
        return f"{self.prefix}:answers:{host}"

    @property
    def node_answers_pattern(self) -> str:
        """The pattern of every node's answers stream (SCAN)."""
        return f"{self.prefix}:answers:*"

    @property
    def answers_awaited(self) -> str:
        """Sorted set host → when a node task was last sent to it: whose answers to read."""
        return f"{self.prefix}:answers-awaited"

    @property
    def answers_bell(self) -> str:
        """A stream the sending side rings when it awaits answers of new nodes: it wakes the
        reader, blocked on the streams it knew of."""
        return f"{self.prefix}:answers-bell"

    @property
    def answers_reader(self) -> str:
        """The lease of the lifecycle worker that reads the answers (one at a time)."""
        return f"{self.prefix}:answers-reader"

    @property
    def answers_read(self) -> str:
        """``"<epoch s> <holder>"`` of the reader's latest pass (``status``)."""
        return f"{self.prefix}:answers-read"

    def answers_rate(self, window_s: int, window: int) -> str:
        """Hash host → entries read from its stream in the ``window``-th ``window_s``."""
        return f"{self.prefix}:answers-rate:{window_s}:{window}"

    @property
    def answers_flagged(self) -> str:
        """Hash host → why its answers were refused wholesale (JSON: when, what)."""
        return f"{self.prefix}:answers-flagged"

    @property
    def jobs_index(self) -> str:
        """The set of tracked job ids: a record, and a Workflow not yet seen gone."""
        return f"{self.prefix}:jobs"

    def attempts(self, task_id: str) -> str:
        """How many runs of a task message failed (poison-message guard)."""
        return f"{self.prefix}:attempts:{task_id}"

    @property
    def failures(self) -> str:
        """Hash of task id → recorded permanent failure (JSON)."""
        return f"{self.prefix}:failures"

    @property
    def ledger(self) -> str:
        """Hash task id → the sent task message without an outcome yet (JSON)."""
        return f"{self.prefix}:ledger"

    @property
    def ledger_due(self) -> str:
        """Sorted set task id → when ``housekeeping.redeliver`` sends it again."""
        return f"{self.prefix}:ledger-due"

    def observe_pending(self, jobid: int) -> str:
        """Set while an ``observe`` of the job is queued (coalescing)."""
        return f"{self.prefix}:observe-pending:{jobid}"

    @property
    def workflow_seen(self) -> str:
        """Hash jobid → ``"<resourceVersion> <epoch s>"`` of the job's latest Workflow event."""
        return f"{self.prefix}:workflow-seen"

    @property
    def observed(self) -> str:
        """Hash jobid → ``"<resourceVersion> <epoch s>"`` of each record's last observe."""
        return f"{self.prefix}:observed"

    @property
    def handled(self) -> str:
        """Hash jobid → the resourceVersion of the Workflow the job's last completed observe
        decided on and acted upon (written as that observe's run settles)."""
        return f"{self.prefix}:handled"

    @property
    def resync_due(self) -> str:
        """Sorted set jobid → when ``dws.resync`` looks at the job's notes again."""
        return f"{self.prefix}:resync-due"

    def watch_rv(self, plural: str) -> str:
        """The last resourceVersion the watcher processed for ``plural``."""
        return f"{self.prefix}:watch-rv:{plural}"

    @property
    def watcher_leader(self) -> str:
        """The watcher leader lease (its value names the holder: ``host:pid:token``)."""
        return f"{self.prefix}:watcher-leader"

    @property
    def beat_leader(self) -> str:
        """The beat lease: which beat fires the periodic tasks."""
        return f"{self.prefix}:beat:leader"

    @property
    def beat_tick(self) -> str:
        """``"<epoch s> <holder>"`` of the leading beat's latest tick."""
        return f"{self.prefix}:beat:tick"

    @property
    def workers(self) -> str:
        """Hash Celery worker → its last heartbeat and queues (``pipeline.store.workers``)."""
        return f"{self.prefix}:workers"

    @property
    def alive(self) -> str:
        """Hash queue → epoch s its latest ``housekeeping.heartbeat`` ran (a worker took it)."""
        return f"{self.prefix}:alive"

    @property
    def rabbits(self) -> str:
        """Hash rabbit → its last observed Storage health (JSON)."""
        return f"{self.prefix}:rabbits"

    @property
    def resource_eventlog(self) -> str:
        """The RFC 44 resource eventlog and journal (a stream of events)."""
        return f"{self.prefix}:resource-eventlog"

    @property
    def resource_r(self) -> str:
        """R as the latest ``resource-define`` set it (JSON)."""
        return f"{self.prefix}:resource-R"

    @property
    def resource_epoch(self) -> str:
        """The timestamp of the latest ``restart`` event: which Flux incarnation is up."""
        return f"{self.prefix}:resource-epoch"

    @property
    def flux_jobs(self) -> str:
        """Hash jobid → ``active`` or ``inactive <epoch s>``: Flux's jobs, as the bridge
        reads them."""
        return f"{self.prefix}:flux-jobs"

    @property
    def flux_jobs_synced(self) -> str:
        """When a bridge last read the events journal's backlog (epoch s)."""
        return f"{self.prefix}:flux-jobs-synced"

    @property
    def rabbits_told(self) -> str:
        """Hash rabbit → what the pipeline last told Flux of it (JSON: ssds, properties,
        drains, and the Flux incarnation it told)."""
        return f"{self.prefix}:rabbits-told"

    @property
    def systemstatus(self) -> str:
        """Hash of the SystemStatus sync: the journal cursor, hosts disabled by our drains."""
        return f"{self.prefix}:systemstatus"

    def release(self, jobid: int) -> str:
        """The verdict on the job's node prologs (JSON), read by ``coral2-pipeline flux-prolog``."""
        return f"{self.prefix}:release:{jobid}"

    def node_release(self, host: str, jobid: int) -> str:
        """The job's verdict as node ``host``'s per-rank prolog reads it (``node_prologs``)."""
        return f"{self.prefix}:release:{host}:{jobid}"

    def node_release_wake(self, host: str, jobid: int) -> str:
        """The wake-up list of node ``host``'s per-rank prolog of the job."""
        return f"{self.prefix}:release-wake:{host}:{jobid}"

    def release_wake(self, jobid: int) -> str:
        """A list pushed when the verdict is written: the waiting prolog blocks on it."""
        return f"{self.prefix}:release-wake:{jobid}"

    def tally(self, jobid: int, phase: str) -> str:
        """Set of the nodes that answered the job's ``phase`` (``prolog``, ``stopped``)."""
        return f"{self.prefix}:tally:{jobid}:{phase}"

    def tally_meta(self, jobid: int) -> str:
        """Hash of the job's node-work facts the answers read without its lock."""
        return f"{self.prefix}:tally:{jobid}"

    def transitions(self, state: str) -> str:
        """Hash of the transition histogram out of ``state``: bucket index → count, and
        ``sum`` (s)."""
        return f"{self.prefix}:metrics:transition:{state}"

    @property
    def transition_states(self) -> str:
        """Set of the states with a transition histogram."""
        return f"{self.prefix}:metrics:transition-states"

    @property
    def failures_total(self) -> str:
        """Hash task name → runs failed for good, ever (never cleared)."""
        return f"{self.prefix}:metrics:failures-total"

    def timeline(self, jobid: int) -> str:
        """Stream of what happened to the job (``coral2-pipeline job show``)."""
        return f"{self.prefix}:timeline:{jobid}"
