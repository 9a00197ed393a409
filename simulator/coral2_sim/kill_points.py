"""Kill points: a worker killed between two actions of a task, at a test's or a chaos
run's word (a worker plugin, never installed in production).

A run sets :data:`KILL_FILE_VARIABLE` in a worker's environment to a trigger file's
path; at the next gap between two actions after the file appears, the worker removes
it and SIGKILLs itself (``pipeline.perform.performer.set_between``).
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from typing import Any

from pipeline.perform import performer as act
from pipeline.states.actions import Action

log = logging.getLogger("coral2_pipeline.act")

#: The variable naming the trigger file.
KILL_FILE_VARIABLE = "CORAL2_TEST_KILL_FILE"


def kill_on_trigger(trigger: str) -> Callable[[int, Action | None], None]:
    """The hook that kills this process at the first gap after ``trigger`` appears."""

    def between(jobid: int, action: Action | None) -> None:
        try:
            os.unlink(trigger)
        except FileNotFoundError:
            return
        log.warning("job %s: killed before %s (%s)", jobid, action, KILL_FILE_VARIABLE)
        os.kill(os.getpid(), signal.SIGKILL)

    return between


def install(app: Any) -> None:
    """The worker plugin: arm the kill points when the environment names a trigger."""
    trigger = os.environ.get(KILL_FILE_VARIABLE)
    if trigger:
        act.set_between(kill_on_trigger(trigger))
