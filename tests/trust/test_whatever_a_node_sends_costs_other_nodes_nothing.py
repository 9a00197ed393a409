"""A generator plays root on one node: through its own Redis user, as ``redis-acl`` writes
it, it sends every command that user's ACL allows (read from ``ACL GETUSER``, not typed
here), on every key it may touch, with generated arguments — any bytes, numbers of every
shape, entries the pipeline does not expect. Between its steps another node keeps
answering and losing copies, and the real answers reader, redelivery, exporter and the
status report run. After every step: the other node's answer is counted, its lost copy
sent again, its verdict written; the exporter says Redis is up; every node flagged is named
by ``status``; nothing raised and no log line carries a traceback.

``make test`` runs a bounded number of examples; ``make test-all`` many more
(``CORAL2_TRUST_EXAMPLES``)."""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from pipeline.cli.exporter_cmd import PipelineCollector
from pipeline.cli.status_flags import pipeline_flags
from pipeline.model.answers import PrologDone
from pipeline.platform.acl import acl_file
from pipeline.platform.answers import encode
from pipeline.platform.sending import settings_of
from pipeline.store import Store
from pipeline.store.report import pipeline_view
from pipeline.tasks.answers import AnswerReader
from tests.tasks.eager_app import eager_app, store_of_app

ATTACKER, OTHER = "n1", "n2"
#: Examples of the attack: a bounded, repeatable run (derandomized) unless the environment
#: asks for a longer, random one (``make test-all``).
EXAMPLES = int(os.environ.get("CORAL2_TRUST_EXAMPLES", "0")) or None

#: Numbers of every shape a parser may meet.
ODD_NUMBERS = [
    "²",
    "１０",
    "٣",
    "0",
    "-1",
    "+5",
    " 7",
    "7 ",
    "1e309",
    "nan",
    "inf",
    "0x10",
    "9" * 4301,
    "18446744073709551616",
    "99999999999999-0",
    "0-1",
]
#: What a node may write where a number is read.
NUMBERS = st.one_of(st.sampled_from(ODD_NUMBERS), st.integers().map(str))
#: Words Redis commands take as options.
WORDS = ["*", "$", "~", "=", "MAXLEN", "MINID", "NOMKSTREAM", "LIMIT", "EX", "PX", "KEEPTTL"]
WORDS += ["NX", "XX", "GET", "LEFT", "RIGHT", "0.01"]
ATOMS = st.one_of(
    st.sampled_from(ODD_NUMBERS + WORDS),
    st.binary(max_size=48),
    st.text(max_size=24),
    st.integers().map(str),
)
#: What a field of an entry holds: as often a number of an odd shape as anything else.
VALUES = st.one_of(st.sampled_from(ODD_NUMBERS), st.sampled_from(ODD_NUMBERS), ATOMS)
#: Fields a node's stream entry holds, each there or not.
FIELDS = ["task", "id", "ct", "ce", "body", "node", "size", "raw", "reason", "where"]
TASKS = ["node.dead_letter", "job.prolog_done", "job.epilog_done", "job.clientmount_done"]
#: Commands that block: sent with a timeout of their own, never for ever.
BLOCKING = {"brpop", "blpop"}
#: Commands whose every argument is a key: the generated values would name keys of no
#: grant, which is the generator's error, not the node's.
KEYS_ONLY = {"del"}
#: A transaction's commands.
TRANSACTION = {"multi", "exec", "discard", "watch", "unwatch"}
SUFFIXES = st.text(st.characters(codec="ascii"), max_size=12)
#: Commands that change the connection, not a key: sent bare.
CONNECTION = {"hello", "auth", "select", "client", "multi", "exec", "discard", "ping"}


@dataclass(frozen=True)
class Grant:
    """A command the node's user may send, with the keys and channels it may send it on."""

    command: str
    first_arg: str | None
    keys: tuple[str, ...]
    channels: tuple[str, ...]


def _commands(client: redis.Redis, rules: str) -> list[tuple[str, str | None]]:
    """The commands ``rules`` (as ``ACL GETUSER`` shows them) allow, categories expanded."""
    allowed: dict[tuple[str, str | None], None] = {}
    for word in rules.split():
        sign, name = word[0], word[1:].lower()
        if name.startswith("@"):
            members: Any = client.command_list(category=name[1:])
            names = [(m.decode() if isinstance(m, bytes) else str(m), None) for m in members]
        else:
            command, _, sub = name.partition("|")
            names = [(command, sub or None)]
        for item in names:
            if sign == "+":
                allowed[item] = None
            else:
                allowed.pop(item, None)
    return list(allowed)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def grants(client: redis.Redis, user: str) -> list[Grant]:
    """Every command ``user`` may send, from ``ACL GETUSER``: its root permissions and each
    selector's, with the keys and channels each applies to."""
    raw: Any = client.execute_command("ACL", "GETUSER", user)  # redis-py makes it a dict
    info = {_text(k): v for k, v in raw.items()}
    parts = [info] + [{_text(k): v for k, v in s.items()} for s in info.get("selectors", [])]
    out = []
    for part in parts:
        keys = tuple(re.sub(r"^%?[RW]*~", "", k) for k in _text(part["keys"]).split())
        channels = tuple(c.lstrip("&") for c in _text(part["channels"]).split())
        for command, first in _commands(client, _text(part["commands"])):
            out.append(Grant(command, first, keys, channels))
    return out


def fill(pattern: str, suffix: str) -> str:
    """A key of ``pattern``, its glob filled with ``suffix``."""
    return pattern.replace("*", suffix)


class Rig:
    """The management side of one deployment, in this process: its store, the answers
    reader, redelivery, the exporter and the status report."""

    def __init__(self, app: Celery, attacker: redis.Redis) -> None:
        self.app, self.attacker = app, attacker
        self.store: Store = store_of_app(app)
        self.reader = AnswerReader(app, "lifecycle@trust")
        self.collector = PipelineCollector(settings_of(app), self.store)
        self.prefix = settings_of(app).pipeline.queues.node_prefix
        self.jobid = 7_000_000

    def reset(self) -> None:
        """Each example starts afresh: this deployment's keys (its own prefix) and both
        nodes' queues and results deleted, a new reader."""
        store = self.store
        keys = [self.prefix + ATTACKER, self.prefix + OTHER]
        for pattern in (f"{store.keys.prefix}:*", "celery-task-meta-node:*"):
            keys += list(store.client.scan_iter(match=pattern, count=1000))
        store.client.delete(*keys)
        self.reader = AnswerReader(self.app, "lifecycle@trust")

    def other_node_cycle(self) -> None:
        """The other node answers a prolog and loses a copy; the attacker is sent work too,
        so that its stream and queue are read with the other's in every batch."""
        store, now = self.store, time.time()
        self.jobid += 1
        jobid = self.jobid
        store.client.delete(self.prefix + OTHER)  # its worker took what it held
        answered, lost = f"a-{uuid.uuid4().hex}", f"l-{uuid.uuid4().hex}"
        theirs = f"t-{uuid.uuid4().hex}"
        notes = [
            (answered, "node.prolog", {"jobid": jobid, "hostname": OTHER}, self.prefix + OTHER),
            (theirs, "node.prolog", {"jobid": jobid, "hostname": ATTACKER}, self.prefix + ATTACKER),
        ]
        store.ledger.note_all(notes, now=now, resend_after_s=120.0)
        lost_kwargs = {"jobid": jobid, "hostname": OTHER}
        store.ledger.note_all(
            [(lost, "node.prolog", lost_kwargs, self.prefix + OTHER)],
            now=now - 1000,
            resend_after_s=1.0,
        )
        store.answers.await_([OTHER, ATTACKER], now)
        store.tally.expect(jobid, 2)
        entry = encode(self.app, PrologDone(jobid=jobid, node=OTHER, task_id=answered))
        store.client.xadd(store.keys.node_answers(OTHER), entry)  # type: ignore[arg-type]
        for _ in range(3):  # the attacker's entries may fill a batch first
            self.reader.step(block_ms=None)
            if OTHER in store.tally.nodes(jobid, "prolog"):
                break
        assert OTHER in store.tally.nodes(jobid, "prolog"), "the other node's answer was lost"
        self.app.tasks["housekeeping.redeliver"].apply(throw=True)
        held = store.client.lrange(self.prefix + OTHER, 0, -1)
        ids = {json.loads(m)["headers"]["id"] for m in held}
        assert lost in ids, "the other node's lost copy was not sent again"
        store.releases.put(jobid, 0, "", hosts=[ATTACKER, OTHER])
        assert store.releases.get(jobid, OTHER) is not None, "the other node's verdict"
        store.ledger.done_all([answered, lost, theirs])

    def exporter_and_status(self) -> None:
        """The exporter says Redis is up; every flagged node is named by ``status``."""
        (up, *_) = list(self.collector.collect())
        assert up.name == "coral2_up" and up.samples[0].value == 1
        view = pipeline_view(self.store)
        flags = " ".join(f.text for f in pipeline_flags(view, 120.0, None, {}))
        for host in view.answers_flagged:
            assert f"node {host}" in flags, f"status does not name the flagged {host}"


class Tracebacks(logging.Handler):
    """Every log record that carries a traceback, or says CRITICAL."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.CRITICAL:
            self.records.append(record)


@pytest.fixture
def rig(tmp_path: Path, redis_url: str) -> Iterator[tuple[Rig, list[Grant]]]:
    app = eager_app(tmp_path, redis_url, "http://127.0.0.1:9")
    store = store_of_app(app)
    settings = settings_of(app)
    # the node's user exactly as `coral2-pipeline redis-acl --nodes n1` writes it
    user = f"trust-{uuid.uuid4().hex[:8]}"
    line = acl_file(settings, {}, nodes={user: ([ATTACKER], "stolen")}).splitlines()[-1]
    words = re.findall(r"\([^)]*\)|\S+", line)
    assert words[:2] == ["user", user]
    store.client.execute_command("ACL", "SETUSER", user, *words[2:])
    port = store.client.connection_pool.connection_kwargs["port"]
    attacker = redis.Redis(
        port=port, username=user, password="stolen", socket_timeout=5, single_connection_client=True
    )
    try:
        yield Rig(app, attacker), grants(store.client, user)
    finally:
        attacker.close()
        store.client.execute_command("ACL", "DELUSER", user)


def test_the_node_user_is_granted_each_kind_of_its_keys_and_nothing_of_another_nodes(
    rig: tuple[Rig, list[Grant]],
) -> None:
    _, granted = rig
    keyed = {g.command for g in granted if g.keys}
    assert keyed == {
        *("brpop", "lpush", "xadd", "get", "blpop", "rpush", "set", "setex", "publish"),
        "del",  # its own heartbeat, as it stops
    }
    for grant in granted:
        assert all(ATTACKER in key for key in grant.keys), grant
        assert all(OTHER not in key for key in grant.keys), grant
    assert {g.command for g in granted if not g.keys} >= {"ping", "multi", "exec"}


# a failing case's steps hold values of thousands of digits: its repr is long, and wanted
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
def test_whatever_the_node_sends_the_other_node_is_served(
    rig: tuple[Rig, list[Grant]],
) -> None:
    management, granted = rig
    keyed = [g for g in granted if g.keys or g.command in CONNECTION]
    # one command a step; MULTI, EXEC and DISCARD only around the transactions' calls
    single = [g for g in keyed if g.command not in TRANSACTION]
    reached: set[str] = set()  # the commands Redis carried out
    refused: list[str] = []  # what the ACL refused of what it grants: the generator's error

    class NodeAttack(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.node = management.attacker
            management.reset()

        def _send(self, *words: Any) -> None:
            try:
                self.node.execute_command(*words)
                reached.add(str(words[0]).lower())
            except redis.exceptions.NoPermissionError as exc:
                refused.append(f"{words[:2]}: {exc}")
            except redis.ResponseError:
                pass  # a syntax error: the node's own business
            except (redis.ConnectionError, redis.TimeoutError):
                self.node.close()  # it spoke nonsense on its own connection

        def _call(self, grant: Grant, suffix: str, args: list[Any]) -> None:
            words: list[Any] = [grant.command] + ([grant.first_arg] if grant.first_arg else [])
            if grant.command in CONNECTION:
                self._send(*words)  # bare: HELLO 3 or AUTH would change its own protocol
                return
            key = fill(grant.keys[0], suffix)
            if grant.command in BLOCKING:
                self._send(*words, key, "0.01")
            elif grant.command in KEYS_ONLY:
                self._send(*words, key)
            elif grant.command == "publish":
                self._send(*words, fill(grant.channels[0], suffix), *(args[:1] or ["x"]))
            else:
                self._send(*words, key, *args)

        @initialize()
        def each_command_well_formed_once(self) -> None:
            # what the node is granted, each once as its own worker sends it, so that the
            # check below that the attack reached them does not rest on the draws
            for grant in single:
                self._call(grant, "", ["*", "field", "value"])

        @rule(grant=st.sampled_from(single), suffix=SUFFIXES, args=st.lists(VALUES, max_size=3))
        def any_command(self, grant: Grant, suffix: str, args: list[Any]) -> None:
            self._call(grant, suffix, args)

        @rule(
            calls=st.lists(
                st.tuples(st.sampled_from(single), SUFFIXES, st.lists(VALUES, max_size=3)),
                min_size=1,
                max_size=3,
            ),
            end=st.sampled_from(["EXEC", "EXEC", "DISCARD"]),
        )
        def a_transaction(self, calls: list[tuple[Grant, str, list[Any]]], end: str) -> None:
            self._send("MULTI")
            for grant, suffix, args in calls:
                self._call(grant, suffix, args)
            self._send(end)

        @rule(
            task=st.one_of(st.sampled_from(TASKS), st.sampled_from(TASKS), st.text(max_size=20)),
            fields=st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, VALUES)),
            extra=st.dictionaries(st.text(min_size=1, max_size=8), ATOMS, max_size=3),
            kwargs=st.dictionaries(
                st.sampled_from(["jobid", "node", "task_id", "error", "late", "busy", "x"]),
                st.one_of(ATOMS, st.integers(), st.booleans(), st.none(), st.just(OTHER)),
                max_size=5,
            ),
            entry_id=st.sampled_from(["*", "*", "*", "99999999999999-0", "1-1", "0-1"]),
        )
        def an_entry_on_its_stream(
            self,
            task: str,
            fields: dict[str, Any],
            extra: dict[str, Any],
            kwargs: dict[str, Any],
            entry_id: str,
        ) -> None:
            body = json.dumps([[], kwargs, {}], default=str)
            entry = {"task": task, "ct": "application/json", "ce": "utf-8", "body": body}
            entry.update(fields)
            entry.update(extra)
            stream = management.store.keys.node_answers(ATTACKER)
            words: list[Any] = ["XADD", stream, entry_id]
            for name, value in entry.items():
                words += [name, value]
            self._send(*words)

        @rule(
            size=NUMBERS,
            where=VALUES,
            raw=ATOMS,
            reason=ATOMS,
            more=st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=2),
        )
        def a_dead_letter_of_its_own(
            self, size: str, where: Any, raw: Any, reason: Any, more: dict[str, Any]
        ) -> None:
            fields = {"size": size, "where": where, "raw": raw, "reason": reason, **more}
            fields["task"] = "node.dead_letter"
            words: list[Any] = ["XADD", management.store.keys.node_answers(ATTACKER), "*"]
            for name, value in fields.items():
                words += [name, value]
            self._send(*words)

        @invariant()
        def the_other_node_is_served(self) -> None:
            management.other_node_cycle()
            management.exporter_and_status()

        def teardown(self) -> None:
            self._send("DISCARD")

    caught = Tracebacks()
    logging.getLogger().addHandler(caught)
    try:
        run_state_machine_as_test(
            NodeAttack,
            settings=settings(
                max_examples=EXAMPLES or 30,
                derandomize=EXAMPLES is None,
                stateful_step_count=10,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            ),
        )
    finally:
        logging.getLogger().removeHandler(caught)
    assert [r.getMessage() for r in caught.records] == []
    assert refused == []
    # the attack reached the keys: the commands always sent well-formed were carried out
    assert {"xadd", "publish", "brpop", "blpop"} <= reached
