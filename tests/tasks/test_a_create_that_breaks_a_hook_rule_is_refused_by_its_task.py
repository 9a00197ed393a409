"""A ``dws.create`` that reaches a worker without passing the hook — a message signed by a
trusted key but breaking a rule — is checked again by its task: persistent storage for
someone other than the instance owner, a user id that is none, too many directives, bad
syntax, a negative failure tolerance. Each gets the hook's job exception and no Workflow."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.store import Store
from tests.tasks.eager_app import eager_app, store_of_app

OWNER = os.getuid()
XFS = "#DW jobdw type=xfs capacity=10GiB name=s"
PERSISTENT = "#DW create_persistent type=lustre capacity=1TiB name=mine"
SLOT = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
RESOURCES = [{"type": "node", "count": 1, "with": [SLOT]}]


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    return eager_app(
        tmp_path, redis_url, kube[0].url, CORAL2_PIPELINE_PIPELINE__LIMITS__MAX_DIRECTIVES="4"
    )


@pytest.fixture
def store(app: Celery) -> Store:
    return store_of_app(app)


def create(app: Celery, jobid: int, **changes: Any) -> None:
    kwargs: dict[str, Any] = {
        "jobid": jobid,
        "userid": 1001,
        "directives": [XFS],
        "resources": RESOURCES,
        "failure_tolerance": 0,
    }
    app.tasks["dws.create"].apply(kwargs={**kwargs, **changes}).get()


def exception_note(store: Store, jobid: int) -> str:
    entries: Any = store.client.xrange(store.keys.outbox)
    notes = [
        json.loads(f[b"payload"])["note"]
        for _, f in entries
        if f[b"kind"] == b"exception" and f[b"jobid"] == str(jobid).encode()
    ]
    assert len(notes) == 1, notes
    return str(notes[0])


def no_workflow(kube: tuple[KubeApiServer, DwsClient], jobid: int) -> bool:
    try:
        kube[1].get_workflow(f"fluxjob-{jobid}")
    except NotFound:
        return True
    return False


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"userid": OWNER + 1, "directives": [PERSISTENT]}, "only the instance owner"),
        ({"userid": 2**40}, "is not a user id"),
        ({"userid": -1}, "is not a user id"),
        ({"directives": [XFS] * 5}, "pipeline.limits.max_directives"),
        ({"directives": ["#DW jobdw type=nope capacity=1GiB name=x"]}, "invalid string 'nope'"),
        ({"failure_tolerance": -1}, "dw_failure_tolerance must be a positive integer"),
    ],
    ids=["persistent-by-a-user", "huge-uid", "negative-uid", "too-many", "syntax", "tolerance"],
)
def test_the_task_refuses_what_the_hook_would_have(
    app: Celery,
    store: Store,
    kube: tuple[KubeApiServer, DwsClient],
    changes: dict[str, Any],
    says: str,
) -> None:
    jobid = 500 + abs(hash(says)) % 1000
    create(app, jobid, **changes)
    note = exception_note(store, jobid)
    assert note.startswith("DWS workflow interactions failed: ") and says in note
    assert no_workflow(kube, jobid)


def test_the_owner_may_still_create_persistent_storage(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    create(app, 77, userid=OWNER, directives=[PERSISTENT])
    assert not no_workflow(kube, 77)
