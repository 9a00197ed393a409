"""The answers a node worker sends the management side, as types both sides share.

Each answer ends one node task and names it: the node's prolog (``job.prolog_done``), its
clientmount stop (``job.clientmount_done``) and its epilog (``job.epilog_done``). A node
worker builds its answers through these models, and the management side reads an answer
only once it fits them — every argument named, typed and bounded, nothing more — so
that no answer a node can sign holds the reader up or grows what it keeps
(``pipeline.tasks.answers``). Whatever does not fit is set aside as a dead letter with
the one line :func:`parse` gives.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from pipeline.model.pydantic_errors import problems

#: Flux job ids are 64-bit.
JOBID_MAX = 2**64 - 1
#: The longest reason a node may give for a failed prolog; longer ones are cut here.
ERROR_MAX = 4096
#: The most CXI services an epilog can report busy (4 NICs, their services).
BUSY_MAX = 256

Hostname = Annotated[str, StringConstraints(min_length=1, max_length=253)]
TaskId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
JobId = Annotated[int, Field(ge=0, le=JOBID_MAX, strict=True)]


class AnswerName(StrEnum):
    """The Celery task each answer goes on as."""

    PROLOG = "job.prolog_done"
    CLIENTMOUNT = "job.clientmount_done"
    EPILOG = "job.epilog_done"


class Phase(StrEnum):
    """What an answer counts toward when it says the node did its part."""

    PROLOG = "prolog"
    STOPPED = "stopped"
    CLEAN = "clean"


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    jobid: JobId
    node: Hostname
    task_id: TaskId


class PrologDone(_Answer):
    """A node's prolog ended; ``error``: why it could not do its part; ``late``: a copy
    that reached the node after the job's epilog, which it ignored."""

    error: Annotated[str, StringConstraints(max_length=ERROR_MAX)] = ""
    error_type: Annotated[str, StringConstraints(max_length=64)] = "node-prolog"
    late: bool = False

    def phase(self) -> Phase | None:
        return None if self.error or self.late else Phase.PROLOG


class ClientmountDone(_Answer):
    """A node stopped the clientmount service after the job's PreRun (``late``: a copy
    after the job's epilog, which it ignored)."""

    late: bool = False

    def phase(self) -> Phase | None:
        return None if self.late else Phase.STOPPED


class EpilogDone(_Answer):
    """A node's epilog ended; ``busy``: its CXI services still in use."""

    busy: Annotated[
        list[Annotated[str, StringConstraints(max_length=256)]], Field(max_length=BUSY_MAX)
    ] = Field(default_factory=list)

    def phase(self) -> Phase | None:
        return None if self.busy else Phase.CLEAN


Answer = PrologDone | ClientmountDone | EpilogDone

MODELS: dict[str, type[PrologDone] | type[ClientmountDone] | type[EpilogDone]] = {
    AnswerName.PROLOG: PrologDone,
    AnswerName.CLIENTMOUNT: ClientmountDone,
    AnswerName.EPILOG: EpilogDone,
}


def answer_name(answer: Answer) -> AnswerName:
    """The task ``answer`` goes on as."""
    if isinstance(answer, PrologDone):
        return AnswerName.PROLOG
    if isinstance(answer, ClientmountDone):
        return AnswerName.CLIENTMOUNT
    return AnswerName.EPILOG


class AnswerError(ValueError):
    """Raised when an answer does not fit its model; the message is one line."""


def parse(name: str, kwargs: dict[str, Any]) -> Answer:
    """The answer ``name`` with ``kwargs``; :class:`AnswerError` naming what does not fit."""
    model = MODELS.get(name)
    if model is None:
        raise AnswerError(f"{name!r} is not a node answer (one of {sorted(MODELS)})")
    try:
        return model.model_validate(kwargs)
    except ValidationError as exc:
        shown = "; ".join(p if len(p) <= 200 else p[:199] + "…" for p in problems(exc))
        raise AnswerError(f"{name}: {shown}") from None


def cut(error: str) -> str:
    """``error`` as a node sends it: at most :data:`ERROR_MAX` characters."""
    return error if len(error) <= ERROR_MAX else error[: ERROR_MAX - 1] + "…"
