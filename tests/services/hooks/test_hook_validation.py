"""Hooks refuse bad requests with flux-coral2's messages before anything is enqueued."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.services.hooks import HookError, Hooks
from pipeline.settings import load_settings

RESOURCES = [
    {
        "type": "node",
        "count": 1,
        "with": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
        ],
    }
]
R = {
    "version": 1,
    "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}], "nodelist": ["c1"]},
}


class Queue:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, kwargs: dict[str, Any]) -> None:
        self.sent.append((name, kwargs))


@pytest.fixture
def queue() -> Queue:
    return Queue()


@pytest.fixture
def hooks(queue: Queue) -> Hooks:
    preset = '{scratch = "#DW jobdw type=xfs capacity=1GiB name=sc"}'
    settings = load_settings(env={"CORAL2_PIPELINE_RABBIT__PRESETS": preset})
    return Hooks(settings, queue, owner_uid=0)


def create(**changes: Any) -> dict[str, Any]:
    return {
        "jobid": 7,
        "userid": 1001,
        "dw_directives": "#DW jobdw type=xfs capacity=1GiB name=ab",
        "resources": RESOURCES,
        "failure_tolerance": 0,
        **changes,
    }


def test_a_good_create_enqueues_one_task_with_expanded_directives(
    hooks: Hooks, queue: Queue
) -> None:
    hooks.dws_create(create(dw_directives="scratch"))
    assert queue.sent == [
        (
            "dws.create",
            {
                "jobid": 7,
                "userid": 1001,
                "directives": ["#DW jobdw type=xfs capacity=1GiB name=sc"],
                "resources": RESOURCES,
                "failure_tolerance": 0,
            },
        )
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dw_directives": 5}, "Malformed #DW directives, not list or string: 5"),
        (
            {"dw_directives": "#DW create_persistent type=xfs name=pp capacity=1GiB"},
            "only the instance owner can create persistent file systems",
        ),
        (
            {"dw_directives": "#DW jobdw type=xfs capacity=10G name=ab"},
            "argument 'capacity' invalid string '10G'",
        ),
        ({"failure_tolerance": -1}, "dw_failure_tolerance must be a positive integer"),
        ({"resources": []}, "jobspec resources empty"),
        ({"jobid": "7"}, "malformed dws.create payload: jobid"),
    ],
)
def test_bad_creates_are_refused_and_nothing_is_enqueued(
    hooks: Hooks, queue: Queue, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(HookError) as info:
        hooks.dws_create(create(**changes))
    assert message in str(info.value)
    assert queue.sent == []


def test_the_owner_may_create_persistent_storage(hooks: Hooks, queue: Queue) -> None:
    hooks.dws_create(
        create(userid=0, dw_directives="#DW create_persistent type=xfs name=pp capacity=1GiB")
    )
    assert len(queue.sent) == 1


def test_setup_needs_a_valid_r(hooks: Hooks, queue: Queue) -> None:
    hooks.dws_setup({"jobid": 7, "R": R})
    with pytest.raises(HookError, match="version"):
        hooks.dws_setup({"jobid": 7, "R": {**R, "version": 2}})
    assert queue.sent == [("dws.setup", {"jobid": 7, "R": R})]


def test_post_run_teardown_and_abort_pass_through(hooks: Hooks, queue: Queue) -> None:
    hooks.dws_post_run({"jobid": 7, "run_started": False})
    hooks.dws_teardown({"jobid": 7})
    hooks.dws_abort({"jobid": 7})
    assert [name for name, _ in queue.sent] == ["dws.post_run", "dws.teardown", "dws.abort"]
    with pytest.raises(HookError, match="run_started"):
        hooks.dws_post_run({"jobid": 7, "run_started": "yes"})


def test_dispatch_answers_as_coral2_dws_does(hooks: Hooks) -> None:
    assert hooks.dispatch("dws.teardown", {"jobid": 1}) == {"success": True}
    assert hooks.dispatch("dws.create", create(failure_tolerance=-2)) == {
        "success": False,
        "errstr": "dw_failure_tolerance must be a positive integer",
    }
    assert hooks.dispatch("dws.bogus", {})["success"] is False
