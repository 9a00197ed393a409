"""The rules of persistent storage a job names, decided before nnf would: whose instance
it is (``dws.create``), and whether nnf could mount a rabbit-local instance on the job's
computes (``dws.setup``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.errors import InputError
from pipeline.model.directives import (
    CreatePersistent,
    DestroyPersistent,
    PersistentDW,
    parse_directives,
)
from pipeline.model.rabbitmap import RabbitMapping

#: nnf-sos's words for another user's persistent storage (Proposal, and Teardown for a
#: destroy_persistent, where it writes "user ID" in lower case)
NOT_YOURS = "User ID does not match existing persistent storage"
#: A create_persistent of a name in use.
EXISTS = "a persistent storage instance of that name already exists"


@dataclass(frozen=True)
class PersistentOwner:
    """Who owns an existing persistent storage instance, as nnf checks it."""

    userid: int
    #: the instance's ignore-uid annotation: any user may use it (not destroy it)
    shared: bool = False
    #: the Workflow whose create_persistent made it, while that job holds it (DWS's owner
    #: label, taken off at that job's Teardown)
    creator: str | None = None


def check_persistent_owners(
    lines: list[str], userid: int, owners: Mapping[str, PersistentOwner], workflow: str = ""
) -> None:
    """Raise :class:`InputError` for a directive on another user's existing persistent
    storage, which nnf would refuse: a persistentdw or a create_persistent (in Proposal,
    unless the instance ignores user ids), a destroy_persistent (in Teardown, where the
    Workflow would stay in Error and the job's epilog wait); and for a create_persistent of
    a name that exists, whoever owns it: nnf would re-specify the live instance (its
    Servers, its rabbits) under the jobs that use it. ``owners``: the existing instances
    the directives name; ``workflow``: this job's (its own create_persistent, read again
    by a copy of ``dws.create``, is no other)."""
    for directive in parse_directives(lines):
        if not isinstance(directive, PersistentDW | CreatePersistent | DestroyPersistent):
            continue
        owner = owners.get(directive.name)
        if owner is None:
            continue
        if owner.userid != userid and (
            isinstance(directive, DestroyPersistent) or not owner.shared
        ):
            raise InputError(
                f"#DW {directive.command} name={directive.name}: {NOT_YOURS} "
                f"(owned by user {owner.userid})"
            )
        if isinstance(directive, CreatePersistent) and owner.creator != workflow:
            raise InputError(
                f"#DW create_persistent name={directive.name}: {EXISTS} (owned by user "
                f"{owner.userid}): destroy it first (#DW destroy_persistent "
                f"name={directive.name}), or choose another name"
            )


def persistent_names(lines: list[str]) -> list[str]:
    """The persistent storage instances ``lines`` name (none if they do not parse: the
    checks say why)."""
    try:
        parsed = parse_directives(lines)
    except InputError:
        return []
    return [
        d.name for d in parsed if isinstance(d, PersistentDW | CreatePersistent | DestroyPersistent)
    ]


@dataclass(frozen=True)
class PersistentPlacement:
    """Where a persistent instance's storage is: its file system, and how many of its
    allocations each rabbit holds (its Servers)."""

    fs_type: str
    held: Mapping[str, int]


def persistent_placement(
    name: str, instance: PersistentPlacement, computes: list[str], mapping: RabbitMapping
) -> str | None:
    """Why nnf could not mount persistent instance ``name`` on the job's ``computes``, or
    None. Lustre is network storage, mounted everywhere. xfs, gfs2 and raw are allocated
    per compute on rabbits (``AllocatePerCompute``), and nnf's access controller gives each
    rabbit's allocations one each to the computes behind it (``mapClientLocalStorage``): a
    compute behind a rabbit that holds none would get no mount at all, and more computes
    behind a rabbit than its allocations fail PreRun ("Too many clients for storage")."""
    if instance.fs_type not in ("xfs", "gfs2", "raw"):
        return None
    on = ", ".join(f"{r} ({n})" for r, n in sorted(instance.held.items())) or "no rabbit"
    behind: dict[str, list[str]] = {}
    for compute in computes:
        behind.setdefault(mapping.rabbit_of(compute) or "", []).append(compute)
    for rabbit, here in sorted(behind.items()):
        allowed = instance.held.get(rabbit, 0)
        if not allowed:
            return (
                f"#DW persistentdw name={name}: its {instance.fs_type} storage is on {on} "
                f"alone, and compute {here[0]} is behind {rabbit or 'no rabbit'}, where it "
                "would get no storage: run the job on computes behind those rabbits"
            )
        if len(here) > allowed:
            return (
                f"#DW persistentdw name={name}: {len(here)} of the job's computes are behind "
                f"{rabbit}, which holds {allowed} allocation(s) of its {instance.fs_type} "
                f"storage, one a compute (nnf would fail PreRun: Too many clients for "
                f"storage): run at most {allowed} there"
            )
    return None
