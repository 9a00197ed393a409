"""A PreRun whose status names a token Secret that is not the Workflow's own is not
started without its token, nor with another Secret's contents: the job gets a fatal
exception saying why, and nothing reaches Flux's environment."""

from __future__ import annotations

from pipeline.states.actions import SendOnce
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot

WHY = (
    "Workflow fluxjob-42's status.workflowToken names the Secret default/site-ldap, "
    "not default/fluxjob-42-token as DWS names a Workflow's token: not read"
)


def test_the_job_gets_a_fatal_exception_naming_the_secret() -> None:
    actions = decide(snapshot("PreRun", token_refused=WHY), job(), 0.0, settings())
    sent = [a for a in actions if isinstance(a, SendOnce)]
    assert [a.kind for a in sent] == ["exception"]
    assert sent[0].payload == {
        "id": 42,
        "type": "exception",
        "severity": 0,
        "note": f"DW_WORKFLOW_TOKEN: {WHY}",
    }
    assert sent[0].mark == "exception:workflow-token"  # raised once, however many observes


def test_no_prolog_is_released_with_an_environment() -> None:
    actions = decide(snapshot("PreRun", token_refused=WHY), job(), 0.0, settings())
    assert not [a for a in actions if isinstance(a, SendOnce) and a.kind == "prolog-remove"]
