"""The messages the management side sends a node worker, as both sides know them.

Three node tasks do a job's work on its nodes: its prolog (``node.prolog``: the CXI
services, and the clientmount service started for a ``#DW`` job or stopped for another),
the clientmount service stopped once a ``#DW`` job's file systems are mounted
(``node.clientmount``), and its epilog (``node.epilog``: the CXI services destroyed,
the clientmount service started so the file systems can be unmounted). Their names and
arguments are made here, and the node worker (``node_worker``) registers its tasks under
these names with these arguments; the answers each ends are :mod:`pipeline.model.answers`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class NodeTask(StrEnum):
    """The node tasks of a job, by name."""

    PROLOG = "node.prolog"
    CLIENTMOUNT = "node.clientmount"
    EPILOG = "node.epilog"


class Clientmount(StrEnum):
    """What a node does with its clientmount service."""

    START = "start"
    STOP = "stop"


def prolog(
    jobid: int,
    userid: int | None,
    clientmount: Clientmount | None,
    cxi: dict[str, Any] | None,
) -> tuple[NodeTask, dict[str, Any]]:
    """A node's prolog: ``cxi`` its CXI services (``{"vnis": [...], "ncores": n}``, None:
    none), ``clientmount`` what it does with its clientmount service (None: nothing)."""
    return NodeTask.PROLOG, {
        "jobid": jobid,
        "userid": userid,
        "clientmount": clientmount,
        "cxi": cxi,
    }


def epilog(
    jobid: int,
    userid: int | None,
    clientmount: Clientmount | None,
    cxi: dict[str, Any] | None,
) -> tuple[NodeTask, dict[str, Any]]:
    """A node's epilog: ``cxi`` the job's VNIs whose services it destroys (``{"vnis": [...]}``,
    None: none), ``clientmount`` START for a ``#DW`` job (so its file systems unmount)."""
    return NodeTask.EPILOG, {
        "jobid": jobid,
        "userid": userid,
        "clientmount": clientmount,
        "cxi": cxi,
    }


def clientmount_stop(jobid: int) -> tuple[NodeTask, dict[str, Any]]:
    """Stop the clientmount service: the ``#DW`` job's file systems are mounted."""
    return NodeTask.CLIENTMOUNT, {"jobid": jobid, "action": Clientmount.STOP}
