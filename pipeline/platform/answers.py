"""Node answers on a Redis stream, signed as task messages are, read in batches.

A job on every node of a machine gets one answer per node to its prolog and
to its epilog. Each used to be a Celery task of its own on the lifecycle
queue: its fetch, kombu's unacknowledged-message bookkeeping, its
acknowledgement and the task's own bookkeeping, several Redis round trips an
answer, on one worker process. A node worker now appends each answer to the
stream of its node, ``<key_prefix>:answers:<host>`` (``XADD``: its Redis user may
write that key alone), and one lifecycle worker reads them all, a few hundred at a time
(``pipeline.tasks.answers``).

Each node appends to a stream of its own (``pipeline.store.answers``). An entry is a
task message without its transport: the task name, an id, and
the body Celery's serializer made of ``[[], kwargs, embed]`` with the same
claim (:func:`pipeline.platform.signing.claim`). With signing on the body
is the node key's signed envelope, and the reader verifies it exactly as the
worker's consumer verifies a message (:func:`~pipeline.platform.signing.refusal`):
its signer known before anything is decoded, the claim naming this entry's
task and id, a node's key answering for its own node alone. Only the node
answers (:data:`~pipeline.platform.signing.NODE_ANSWERS`) are read from the
stream, whoever signed them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from kombu.serialization import dumps, loads, prepare_accept_content

from pipeline.model.answers import Answer as AnswerModel
from pipeline.model.answers import answer_name
from pipeline.platform.signing import CLAIM, NODE_ANSWERS, refusal, signed
from pipeline.settings import PipelineSettings

#: The consumer group of the lifecycle workers on the stream.
GROUP = "lifecycle"


def answers_key(pipeline: PipelineSettings, host: str) -> str:
    """The stream ``host``'s answers are appended to: ``<key_prefix>:answers:<host>``."""
    return f"{pipeline.key_prefix}:answers:{host}"


def encode(app: Celery, answer: AnswerModel) -> dict[str, bytes | str]:
    """The stream entry of ``answer``, serialized (and signed, with signing on: by the key
    of the node it names) as ``app`` serializes tasks; ``node`` names its stream's node
    outside the body too (what moves held answers to their streams reads it)."""
    task_id = str(uuid.uuid4())
    name = answer_name(answer)
    embed = {CLAIM: {"task": name, "id": task_id}}
    content_type, encoding, body = dumps(  # type: ignore[no-untyped-call]
        [[], answer.model_dump(exclude_defaults=True), embed], app.conf.task_serializer
    )
    return {
        "task": name,
        "id": task_id,
        "ct": content_type,
        "ce": encoding,
        "body": body,
        "node": answer.node,
    }


@dataclass
class _Message:
    """An entry in the shape :func:`refusal` reads a broker message in."""

    headers: dict[str, Any]
    body: bytes
    content_type: str
    content_encoding: str
    accept: set[str] = field(default_factory=set)
    _body: Any = None

    def decode(self) -> Any:
        """The body, verified and decoded once (:func:`refusal` decodes it first)."""
        if self._body is None:
            self._body = loads(  # type: ignore[no-untyped-call]
                self.body, self.content_type, self.content_encoding, accept=self.accept
            )
        return self._body


@dataclass(frozen=True)
class Answer:
    """One answer read off the stream: its entry id, task name and arguments."""

    entry_id: str
    name: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Unreadable:
    """An entry that is not an answer this process may act on, and why."""

    entry_id: str
    raw: str
    reason: str


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class Reading:
    """What reading an entry needs of the app, looked up once for a reader's batches
    (Celery's settings cost a chain of lookups each)."""

    accept: set[str]
    signed: bool

    @classmethod
    def of(cls, app: Celery) -> Reading:
        """The reading of ``app``'s entries."""
        accept = prepare_accept_content(app.conf.accept_content)  # type: ignore[no-untyped-call]
        return cls(accept, signed(app))


def decode(
    app: Celery, entry_id: str, fields: dict[bytes, bytes], reading: Reading | None = None
) -> Answer | Unreadable:
    """The answer of one stream entry, verified before it is decoded; or why it is
    refused. ``reading``: :meth:`Reading.of` ``app``, when the caller keeps it."""
    reading = reading or Reading.of(app)
    name = _text(fields.get(b"task", b""))
    headers = {"task": name, "id": _text(fields.get(b"id", b""))}
    raw = f"headers={headers} body={_text(fields.get(b'body', b''))[:2000]}"
    if name not in NODE_ANSWERS:
        return Unreadable(entry_id, raw, f"{name!r} is not a node answer")
    message = _Message(
        headers,
        fields.get(b"body", b""),
        _text(fields.get(b"ct", b"")),
        _text(fields.get(b"ce", b"")),
        reading.accept,
    )
    try:
        if reading.signed:
            why = refusal(message)
            if why is not None:
                return Unreadable(entry_id, raw, why)
        body = message.decode()
    except Exception as exc:  # kombu's ContentDisallowed, a JSON error: never a crash
        return Unreadable(entry_id, raw, f"cannot decode it: {exc}")
    if not (isinstance(body, list) and len(body) == 3 and isinstance(body[1], dict)):
        return Unreadable(entry_id, raw, "its body is not [args, kwargs, embed]")
    return Answer(entry_id, name, dict(body[1]))
