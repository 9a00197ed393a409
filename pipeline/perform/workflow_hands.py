"""The Workflow side of the performer: creating the job's Workflow, moving its
``desiredState``, its Servers and Computes, its finalizer and deletion, and the drains
DWS is told of (SystemStatus, a rabbit's Storage). :class:`WorkflowHands` is the base of
the performer (:mod:`pipeline.perform.performer`), which hands it every
:data:`~pipeline.states.actions.WorkflowAction`."""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, NoReturn, assert_never

from pipeline.clients.k8s import DwsClient
from pipeline.errors import AlreadyExists, Conflict, Forbidden, NotFound, TemporaryError
from pipeline.model.workflow import ready_since, state_of
from pipeline.states.actions import (
    Action,
    CreateWorkflow,
    DeleteWorkflow,
    DisableComputes,
    DisableRabbit,
    ForceReady,
    PatchComputes,
    PatchDesiredState,
    PatchServers,
    RemoveFinalizer,
    WorkflowAction,
)
from pipeline.states.hooks import name_of, refused
from pipeline.store import Store

log = logging.getLogger("coral2_pipeline.act")


class Stop(Exception):
    """The rest of the actions is not to be done; ``done``: nothing went wrong (a
    duplicate found its work done), else the list failed (refused, Workflow gone)."""

    def __init__(self, *, done: bool) -> None:
        super().__init__()
        self.done = done


class WorkflowHands(ABC):
    """The job's Workflow, changed as its actions say."""

    def __init__(self, store: Store, dws: DwsClient, jobid: int, workflow: dict[str, Any] | None):
        self.store, self.dws, self.jobid = store, dws, jobid
        self.name = name_of(jobid)
        self.known = workflow  # the copy the first Workflow change may start from

    @abstractmethod
    def run(self, actions: Sequence[Action]) -> None:
        """Perform ``actions``: the performer's, which a refusal or a Workflow found gone
        hands the actions to perform instead (:meth:`_instead`)."""

    def _instead(self, actions: Sequence[Action] | None, error: Exception) -> NoReturn:
        """Perform ``actions`` instead of the rest (None: raise ``error``)."""
        if actions is None:
            raise error
        self.run(actions)
        raise Stop(done=False) from error

    def on_workflow(self, action: WorkflowAction) -> None:
        """Perform one action on the job's Workflow or on what DWS is told of drains."""
        store, dws, name = self.store, self.dws, self.name
        match action:
            case CreateWorkflow(body, refused_as):
                try:
                    dws.create_workflow(body)
                except AlreadyExists:
                    pass
                except Forbidden as exc:
                    self._instead(refused(self.jobid, refused_as, str(exc)), exc)
            case PatchDesiredState(expected, desired, if_moved_on, if_gone):
                self._move(expected, desired, if_moved_on, if_gone)
            case PatchServers(server, namespace, sets, if_gone):
                try:
                    dws.patch_servers(server, sets, namespace=namespace)
                except NotFound as exc:
                    if self._exists():
                        raise
                    self._instead(if_gone, exc)
            case PatchComputes(hosts):
                dws.patch_computes(name, [{"name": h} for h in hosts])
            case ForceReady():
                dws.patch("workflows", name, {"spec": {"forceReady": True}})
            case RemoveFinalizer():
                with suppress(NotFound):
                    dws.remove_finalizer(name, current=self._current())
            case DeleteWorkflow():
                current = self._current()
                with suppress(NotFound):
                    current = current or dws.get_workflow(name)
                    dws.remove_finalizer(name, current=current)
                if dws.delete_workflow(name):
                    self._count_transition("Teardown", current)
            case DisableComputes(nodes):
                store.systemstatus.disable(list(nodes))  # until the journal shows the undrain
                try:
                    disabled = {"data": {"nodes": dict.fromkeys(nodes, "Disabled")}}
                    dws.patch_system_status(disabled)
                except NotFound:  # no SystemStatus default (nnf runs without): the drains
                    # that follow in the list still go to Flux; status says it is missing
                    log.warning(
                        "job %s: no SystemStatus default to disable %s in", self.jobid, nodes
                    )
                    store.systemstatus.note_missing(True)
            case DisableRabbit(rabbit, reason, date):
                body = {
                    "metadata": {"annotations": {"disable_reason": reason, "disable_date": date}},
                    "spec": {"state": "Disabled"},
                }
                with suppress(NotFound):
                    dws.patch_storage(rabbit, body)
            case _:
                assert_never(action)

    def _current(self) -> dict[str, Any] | None:
        current, self.known = self.known, None
        return current

    def _count_transition(self, state: str, workflow: dict[str, Any] | None) -> None:
        """Count the time from DWS marking ``state`` ready to our move out of it, when the
        copy the move started from shows it (the transition histogram), and put the state
        in the job's timeline."""
        ready = ready_since(workflow, state)
        if ready is None or workflow is None:
            return
        now = time.time()
        self.store.metrics.observe_transition(state, now - ready)
        elapsed = (workflow.get("status") or {}).get("elapsedTimeLastState")
        took = f" after {elapsed}" if elapsed else ""
        line = f"{state} ready{took}; moved on {(now - ready) * 1000:.0f} ms later"
        self.store.timeline.note(self.jobid, "dws", line, at=ready)

    def _asked_or_again(
        self, desired: str, if_gone: tuple[Action, ...] | None, exc: Conflict
    ) -> None:
        """A move to ``desired`` from any state met conflicts on every attempt (DWS kept
        writing the Workflow under the patch): done if the Workflow asks for ``desired``
        now, else tried again later — never taken as done, or the record's mark would
        say Teardown was asked of a Workflow that never heard of it."""
        try:
            asked = (self.dws.get_workflow(self.name).get("spec") or {}).get("desiredState")
        except NotFound as gone:
            self._instead(if_gone, gone)
        if asked != desired:
            raise TemporaryError(f"job {self.jobid}: {exc}; trying again") from exc

    def _exists(self) -> bool:
        """Whether the Workflow is there to stay: one being deleted counts as gone (its
        children go first, so a child's 404 means the same)."""
        try:
            workflow = self.dws.get_workflow(self.name)
        except NotFound:
            return False
        return not (workflow.get("metadata") or {}).get("deletionTimestamp")

    def _move(
        self,
        expected: str | None,
        desired: str,
        if_moved_on: str,
        if_gone: tuple[Action, ...] | None,
    ) -> None:
        try:
            moved, now = self.dws.move_desired_state(
                self.name, desired, expected_state=expected, current=self._current()
            )
            if now:  # the answer still shows the state it moved out of, ready
                self._count_transition(expected or state_of(moved), moved)
        except NotFound as exc:
            self._instead(if_gone, exc)
        except Conflict as exc:
            if expected is None:  # a move from anywhere (Teardown): done only once asked
                self._asked_or_again(desired, if_gone, exc)
                return
            if if_moved_on == "continue":
                log.info("job %s: %s (the workflow moved on)", self.jobid, exc)
                return
            try:
                asked = (self.dws.get_workflow(self.name).get("spec") or {}).get("desiredState")
            except NotFound as gone:
                self._instead(if_gone, gone)
            if asked != expected:
                raise Stop(done=True) from exc  # a duplicate: the Workflow has moved on
            # still asked for ``expected``: it kept changing under the patch; try again later
            raise TemporaryError(f"job {self.jobid}: {exc}") from exc
