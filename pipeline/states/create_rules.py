"""What a ``dws.create`` must satisfy: checked by the hook process before it sends the
request (a module of its own, so that the hook loads no more than the check needs), and
again by the task, whose decision is :func:`pipeline.states.hooks.on_create`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.errors import InputError
from pipeline.model.directives import check_persistent_creation, parse_directives
from pipeline.model.jobspec import parse_resources
from pipeline.settings import Settings

#: The largest user id Flux gives a job (a 32-bit uid_t, less the -1 of "none").
MAX_UID = 2**32 - 2


@dataclass(frozen=True)
class CreateRules:
    """What a ``dws.create`` must satisfy, from the settings: checked by the hook, and
    again by the task (a message that passes signing but breaks a rule is refused)."""

    owner_uid: int
    restrict_persistent: bool
    max_directives: int
    max_bytes: int

    @classmethod
    def of(cls, settings: Settings, owner_uid: int) -> CreateRules:
        """The rules under ``settings``, the instance owner being ``owner_uid``."""
        limits = settings.pipeline.limits
        return cls(
            owner_uid=owner_uid,
            restrict_persistent=settings.rabbit.restrict_persistent_creation,
            max_directives=limits.max_directives,
            max_bytes=limits.max_dw_bytes,
        )


def check_create(
    lines: list[str],
    userid: int,
    resources: list[dict[str, Any]],
    failure_tolerance: int,
    rules: CreateRules,
) -> None:
    """Raise :class:`InputError` naming what a ``dws.create`` breaks: the directive
    limits, persistent creation by a non-owner, the directives' syntax, the jobspec
    resources, the user id or the failure tolerance."""
    if not 0 <= userid <= MAX_UID:
        raise InputError(f"userid {userid} is not a user id (0 to {MAX_UID})")
    if failure_tolerance < 0:
        raise InputError("dw_failure_tolerance must be a positive integer")  # as flux-coral2
    if len(lines) > rules.max_directives:
        raise InputError(
            f"{len(lines)} #DW directives; at most {rules.max_directives} "
            "(pipeline.limits.max_directives)"
        )
    size = sum(len(line.encode("utf-8", "surrogatepass")) for line in lines)
    if size > rules.max_bytes:
        raise InputError(
            f"#DW directives of {size} bytes; at most {rules.max_bytes} "
            "(pipeline.limits.max_dw_bytes)"
        )
    check_persistent_creation(
        lines, userid=userid, owner_uid=rules.owner_uid, restrict=rules.restrict_persistent
    )
    parse_directives(lines)
    parse_resources(resources)
