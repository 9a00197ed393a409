"""``dws.create`` reads the persistent storage its directives name: another user's
persistentdw or destroy_persistent is refused with nnf's words before any Workflow exists
(nnf would refuse the first in Proposal, and the second only in Teardown, leaving the
Workflow in Error and the epilog waiting); so is a create_persistent over another user's
instance where creation is open to all. An instance that ignores user ids may be used by
anyone, never destroyed by another; the owner's own directives, and names no instance has
yet, go through. A create_persistent of a name that exists is refused whoever asks (nnf
would re-specify the live instance), but for the job that made it (a copy of dws.create)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.errors import InputError
from pipeline.states.persistent import PersistentOwner, check_persistent_owners
from pipeline.store import Store
from tests.tasks.test_a_create_that_breaks_a_hook_rule_is_refused_by_its_task import (
    app,
    create,
    exception_note,
    no_workflow,
    store,
)

__all__ = ["app", "store"]  # the fixtures, shared

OWNER, OTHER = 1001, 1002


def instance(dws: DwsClient, name: str, userid: int, **annotations: str) -> None:
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    dws.create("persistentstorageinstances", {"metadata": meta, "spec": {"userID": userid}})


@pytest.mark.parametrize(
    "directive",
    [
        "#DW persistentdw name=proj",
        "#DW destroy_persistent name=proj",
    ],
)
def test_another_users_instance_is_refused_before_any_workflow(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient], directive: str
) -> None:
    instance(kube[1], "proj", OWNER)
    create(app, 801, userid=OTHER, directives=[directive])
    command = directive.split()[1]
    assert exception_note(store, 801) == (
        f"DWS workflow interactions failed: #DW {command} name=proj: User ID does not match "
        f"existing persistent storage (owned by user {OWNER})"
    )
    assert no_workflow(kube, 801)


def test_a_shared_instance_may_be_used_by_anyone_but_destroyed_only_by_its_owner(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    instance(kube[1], "team", OWNER, **{"dataworkflowservices.github.io/ignore-uid": "true"})
    create(app, 802, userid=OTHER, directives=["#DW persistentdw name=team"])
    assert not no_workflow(kube, 802)
    create(app, 803, userid=OTHER, directives=["#DW destroy_persistent name=team"])
    assert "User ID does not match existing persistent storage" in exception_note(store, 803)
    assert no_workflow(kube, 803)


def test_the_owners_directives_and_unknown_names_go_through(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    instance(kube[1], "mine", OWNER)
    create(app, 804, userid=OWNER, directives=["#DW persistentdw name=mine"])
    create(app, 805, userid=OTHER, directives=["#DW persistentdw name=nobodys"])
    assert not no_workflow(kube, 804) and not no_workflow(kube, 805)


def test_a_create_persistent_over_another_users_instance_is_refused_where_creation_is_open() -> (
    None
):
    owners = {"proj": PersistentOwner(OWNER)}
    with pytest.raises(InputError, match="User ID does not match existing persistent storage"):
        check_persistent_owners(
            ["#DW create_persistent type=xfs capacity=10GiB name=proj"], OTHER, owners
        )


def test_a_create_persistent_of_a_name_that_exists_is_refused_even_for_its_owner(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    # nnf would re-specify the live instance: its Servers on another rabbit, under the jobs
    # that mount it
    owner = os.getuid()  # the instance owner: who may create persistent storage
    instance(kube[1], "live", owner)
    directive = "#DW create_persistent type=xfs capacity=10GiB name=live"
    create(app, 806, userid=owner, directives=[directive])
    assert exception_note(store, 806) == (
        "DWS workflow interactions failed: #DW create_persistent name=live: a persistent "
        f"storage instance of that name already exists (owned by user {owner}): destroy it "
        "first (#DW destroy_persistent name=live), or choose another name"
    )
    assert no_workflow(kube, 806)


def test_a_copy_of_dws_create_reads_its_own_instance_as_its_own() -> None:
    owners = {"made": PersistentOwner(OWNER, creator="fluxjob-807")}
    lines = ["#DW create_persistent type=xfs capacity=10GiB name=made"]
    check_persistent_owners(lines, OWNER, owners, "fluxjob-807")  # no refusal
    with pytest.raises(InputError, match="already exists"):
        check_persistent_owners(lines, OWNER, owners, "fluxjob-808")
