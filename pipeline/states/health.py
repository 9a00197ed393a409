"""What the pipeline does about nodes and rabbits that failed a job.

flux-coral2 drains computes whose rabbit file systems did not unmount,
marks them Disabled in DWS's SystemStatus, gives computes behind a rabbit
that did not mount the ``badrabbit`` property, and disables rabbits left
holding an allocation when the epilog is given up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from pipeline.model.hostlist import unique_hostlist
from pipeline.states.actions import Action, DisableComputes, DisableRabbit, HoldBadRabbit, SendOnce


def drain_unmounted(nodes: Sequence[str]) -> list[Action]:
    """Drain the computes whose mounts did not come down; Disabled in SystemStatus."""
    if not nodes:
        return []
    targets = unique_hostlist(list(nodes))
    drain = {"targets": targets, "mode": "update", "reason": "failed to unmount rabbit"}
    return [
        DisableComputes(tuple(sorted(set(nodes)))),
        SendOnce("drain", drain, f"drain:{targets}"),
    ]


def badrabbit(nodes: Sequence[str], rabbit_of: Mapping[str, str]) -> list[Action]:
    """Give ``nodes`` (computes whose mounts did not come up) the ``badrabbit`` property,
    held in the record of their rabbit (``rabbit_of``) until its Storage next changes."""
    if not nodes:
        return []
    payload = {"targets": unique_hostlist(list(nodes)), "key": "badrabbit", "value": "bad"}
    by_rabbit: dict[str, list[str]] = {}
    for node in sorted(set(nodes)):
        if node in rabbit_of:
            by_rabbit.setdefault(rabbit_of[node], []).append(node)
    return [
        SendOnce("set-property", payload, f"badrabbit:{payload['targets']}"),
        *(HoldBadRabbit(rabbit, tuple(computes)) for rabbit, computes in by_rabbit.items()),
    ]


def disable_rabbits(workflow: str, rabbits: Sequence[str], now: float) -> list[Action]:
    """Disable every rabbit still holding an allocation of ``workflow`` (``dws.abort``)."""
    reason = f"workflow {workflow} timed out with an active allocation on this rabbit"
    date = str(datetime.fromtimestamp(now))
    return [DisableRabbit(rabbit, reason, date) for rabbit in sorted(set(rabbits))]
