"""The Storage reconciler of nnf-sos (``DWSStorageReconciler``), as far as a job meets it.

A Storage whose ``spec.state`` is ``Disabled`` — the pipeline writes it on ``dws.abort``,
an admin may too — is given ``status.status: Disabled`` with the message "Storage node
manually disabled"; set ``Enabled`` again, its status returns to what the rabbit's node
says (here: the status it had before, Ready by default) and the message is cleared.
nnf-sos does this in ``internal/controller/dws_storage_controller.go`` (``Reconcile``),
for Storages labelled as Rabbit storage alone. The watcher then sees a rabbit that is
not Ready, and the pipeline takes its ssds down in Flux: no new job is placed on it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pipeline.clients.k8s import DwsClient
from pipeline.errors import KubeError, NotFound

log = logging.getLogger("coral2_sim.dws.storage")

#: nnf-sos's words for a Storage disabled by its ``spec.state``.
DISABLED_MESSAGE = "Storage node manually disabled"
#: The label nnf-sos reconciles Storages by (``dataworkflowservices.github.io/storage``).
RABBIT_LABEL = ("dataworkflowservices.github.io/storage", "Rabbit")


class StorageReconciler:
    """Follows every Storage and keeps its status as nnf-sos's reconciler does."""

    def __init__(self, dws: DwsClient) -> None:
        self.dws = dws
        #: rabbit → the status it had before it was disabled (what its node says)
        self._before: dict[str, str] = {}
        self._lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        """Reconcile each Storage event until ``stop`` is set."""
        self.dws.follow("storages", self._on_event, stop)

    def _on_event(self, kind: str, storage: dict[str, Any]) -> None:
        if kind == "DELETED":
            return
        try:
            self.reconcile(storage)
        except NotFound:
            pass
        except KubeError as exc:  # the next event reconciles it again
            log.warning("storage %s: %s", storage["metadata"]["name"], exc)

    def reconcile(self, storage: dict[str, Any]) -> None:
        """What nnf-sos writes of one Storage's status (module docstring)."""
        meta = storage.get("metadata") or {}
        name = meta["name"]
        if (meta.get("labels") or {}).get(RABBIT_LABEL[0]) != RABBIT_LABEL[1]:
            return
        state = (storage.get("spec") or {}).get("state", "Enabled")
        status = storage.get("status") or {}
        now = status.get("status")
        with self._lock:
            if state == "Disabled":
                if now == "Disabled" and status.get("message") == DISABLED_MESSAGE:
                    return
                if now and now != "Disabled":
                    self._before[name] = str(now)
                change = {"status": "Disabled", "message": DISABLED_MESSAGE}
            elif now == "Disabled":
                change = {"status": self._before.pop(name, "Ready"), "message": ""}
            else:
                return
        self.dws.patch("storages", name, {"status": change}, status=True)
