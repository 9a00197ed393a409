"""Redis store: job records, one-shot marks, per-job locks, deadlines and the outbox.

Every key lives under ``pipeline.key_prefix`` (:class:`~pipeline.store.keys.Keys`).
redis-py errors are translated into :class:`~pipeline.errors.StoreUnavailable`
here, at the store's boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import redis

from pipeline.model.job import JobRecord
from pipeline.store.connection import connect
from pipeline.store.deadlines import Deadline, Deadlines
from pipeline.store.jobs import JobStore
from pipeline.store.keys import Keys
from pipeline.store.ledger import Entry, Ledger
from pipeline.store.marks import Holding, JobLocks, Marks
from pipeline.store.outbox import Delivery, Outbox, OutboxMessage

__all__ = [
    "Deadline",
    "Deadlines",
    "Delivery",
    "Entry",
    "Holding",
    "JobLocks",
    "JobRecord",
    "JobStore",
    "Keys",
    "Ledger",
    "Marks",
    "Outbox",
    "OutboxMessage",
    "Store",
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

    @classmethod
    def from_url(cls, url: str, prefix: str) -> Store:
        """Connect to ``url`` with key prefix ``prefix``."""
        return cls(connect(url), Keys(prefix))

    @cached_property
    def jobs(self) -> JobStore:
        """Job records."""
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
        return Outbox(self.client, self.keys)
