"""The object store behind the simulated Kubernetes API server.

Objects are kept per (group, plural, namespace, name), version-agnostic;
every write gets the next global ``resourceVersion`` and an event in a
bounded log that watches replay from. Semantics follow the API server:
server-set metadata, generation bumped on spec changes,
no event for a no-op write, optimistic concurrency on ``resourceVersion``,
status subresources per type, finalizers and ``deletionTimestamp``.

A stored object is never changed in place: a write stores a new
top-level dict with new metadata, sharing the parts it did not change with
the version before (the watch log shares them too). So reads and writes
copy only at the edge: by default every method copies what it keeps and
what it returns; ``copy=False`` — for the server's own routes, whose
answers are serialized or copied at their edge — hands the body over to
the store and returns the stored object itself, which the caller must
not change.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from coral2_sim.kube import schema
from coral2_sim.kube.patch import json_copy
from coral2_sim.kube.resources import (
    ApiError,
    ResourceType,
    first_equality,
    labels_of,
    matches_labels,
)


@dataclass(frozen=True)
class Event:
    """One change: ``ADDED``, ``MODIFIED`` or ``DELETED`` with the object after it.

    The object is never changed after the event is logged (every write
    stores a new copy), so each watch line is encoded once per API version
    and shared by every watcher.
    """

    rv: int
    type: str
    rtype: ResourceType
    namespace: str
    obj: dict[str, Any]
    _lines: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    def line(self, api_version: str) -> bytes:
        """The watch line for this event: ``{"type": ..., "object": ...}`` and a newline."""
        encoded = self._lines.get(api_version)
        if encoded is None:
            body = {"type": self.type, "object": {**self.obj, "apiVersion": api_version}}
            encoded = self._lines[api_version] = json.dumps(body).encode() + b"\n"
        return encoded


#: etcd's default largest request (``--max-request-bytes``): an object whose encoding is
#: larger cannot be stored, and kube-apiserver answers with etcd's own error (a 500).
ETCD_MAX_BYTES = 1536 * 1024


def _fits(obj: dict[str, Any]) -> None:
    if len(json.dumps(obj)) > ETCD_MAX_BYTES:
        raise ApiError(500, "InternalError", "etcdserver: request is too large")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: An admission webhook: (operation, type, old object or None, new object) → the object to
#: store (a mutating hook may change a copy of the new one, never the old one); raise
#: ApiError to deny.
Admission = Callable[[str, ResourceType, dict[str, Any] | None, dict[str, Any]], dict[str, Any]]


class KubeStore:
    """Thread-safe objects, a global resourceVersion and the event log."""

    def __init__(self, event_log_size: int = 20_000) -> None:
        self.admission: list[Admission] = []
        self._lock = threading.RLock()
        # (group, plural) → (namespace, name) → object: a list reads its own type only
        self._objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        # (group, plural) → (label, value) → keys: a list by label reads its matches only
        self._labelled: dict[tuple[str, str], dict[tuple[str, str], set[tuple[str, str]]]] = {}
        # (group, plural) → the condition its watches wait on: an event wakes its own type's
        self._changed: dict[tuple[str, str], threading.Condition] = {}
        self._events: deque[Event] = deque(maxlen=event_log_size)
        self._rv = 0
        self._closed = False

    # --- helpers -------------------------------------------------------------
    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _of(self, rtype: ResourceType) -> dict[tuple[str, str], dict[str, Any]]:
        return self._objects.setdefault((rtype.group, rtype.plural), {})

    def _changed_of(self, rtype: ResourceType) -> threading.Condition:
        key = (rtype.group, rtype.plural)
        changed = self._changed.get(key)
        if changed is None:
            with self._lock:
                changed = self._changed.setdefault(key, threading.Condition(self._lock))
        return changed

    def _store(self, rtype: ResourceType, key: tuple[str, str], obj: dict[str, Any] | None) -> None:
        """Keep ``obj`` under ``key`` (None: drop it), and the label index with it."""
        objects = self._of(rtype)
        index = self._labelled.setdefault((rtype.group, rtype.plural), {})
        old = objects.pop(key, None)
        for label in labels_of(old):
            keys = index[label]
            keys.discard(key)
            if not keys:
                del index[label]
        if obj is not None:
            objects[key] = obj
            for label in labels_of(obj):
                index.setdefault(label, set()).add(key)

    def _emit(self, kind: str, rtype: ResourceType, ns: str, obj: dict[str, Any]) -> None:
        self._events.append(Event(int(obj["metadata"]["resourceVersion"]), kind, rtype, ns, obj))
        self._changed_of(rtype).notify_all()

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion."""
        return self._rv

    def reopen(self) -> None:
        """Serve watches again after :meth:`close` (a restarted API server over the same data)."""
        with self._lock:
            self._closed = False

    def restart(self) -> None:
        """Serve again after :meth:`close` with an empty watch cache, as a restarted API
        server does: a watch from a resourceVersion before now gets 410 Expired."""
        with self._lock:
            self._events.clear()
            self._closed = False

    def close(self) -> None:
        """Wake and end every watch (server shutdown)."""
        with self._lock:
            self._closed = True
            for changed in self._changed.values():
                changed.notify_all()

    # --- reads ---------------------------------------------------------------
    def get(self, rtype: ResourceType, ns: str, name: str, *, copy: bool = True) -> dict[str, Any]:
        """Return one object (a copy unless ``copy`` is False) or raise 404."""
        with self._lock:
            obj = self._of(rtype).get((ns, name))
            if obj is None:
                raise ApiError(
                    404, "NotFound", f'{rtype.plural}.{rtype.group or "core"} "{name}" not found'
                )
            return json_copy(obj) if copy else obj

    def list(
        self,
        rtype: ResourceType,
        ns: str | None,
        selector: str | None = None,
        *,
        copy: bool = True,
    ) -> tuple[list[dict[str, Any]], int]:
        """Return matching objects (all namespaces when ``ns`` is None) and the list RV."""
        with self._lock:
            objects = self._of(rtype)
            label = first_equality(selector)
            keys = (
                objects.keys()
                if label is None
                else self._labelled.get((rtype.group, rtype.plural), {}).get(label, set())
            )
            items = []
            for key in sorted(keys):
                obj = objects[key]
                if (ns is None or key[0] == ns) and matches_labels(obj, selector):
                    items.append(json_copy(obj) if copy else obj)
            return items, self._rv

    # --- writes --------------------------------------------------------------
    def create(
        self, rtype: ResourceType, ns: str, body: dict[str, Any], *, copy: bool = True
    ) -> dict[str, Any]:
        """Create an object; 409 if it exists."""
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ApiError(
                422, "Invalid", f"{rtype.kind} is invalid: metadata.name: Required value"
            )
        with self._lock:
            objects, key = self._of(rtype), (ns, name)
            if key in objects:
                raise ApiError(
                    409, "AlreadyExists", f'{rtype.plural}.{rtype.group} "{name}" already exists'
                )
            obj = json_copy(body) if copy else dict(body)
            if rtype.has_status:
                obj.pop("status", None)
            schema.check(rtype, obj)  # kube-apiserver: the CRD's schema before any webhook
            for hook in self.admission:
                obj = hook("CREATE", rtype, None, obj)
            obj["metadata"] = {
                **meta,
                "namespace": ns if rtype.namespaced else None,
                "uid": str(uuid.uuid4()),
                "creationTimestamp": _now(),
                "generation": 1,
                "resourceVersion": str(self._next_rv()),
            }
            if not rtype.namespaced:
                obj["metadata"].pop("namespace")
            obj["metadata"].pop("deletionTimestamp", None)
            _fits(obj)
            self._store(rtype, key, obj)
            self._emit("ADDED", rtype, ns, obj)
            return json_copy(obj) if copy else obj

    def replace(
        self,
        rtype: ResourceType,
        ns: str,
        name: str,
        new: dict[str, Any],
        *,
        status: bool = False,
        require_rv: bool = False,
        copy: bool = True,
    ) -> dict[str, Any]:
        """Store ``new`` for an existing object (PUT and PATCH end here)."""
        with self._lock:
            objects, key = self._of(rtype), (ns, name)
            old = objects.get(key)
            if old is None:
                raise ApiError(404, "NotFound", f'{rtype.plural}.{rtype.group} "{name}" not found')
            given_rv = (new.get("metadata") or {}).get("resourceVersion")
            if require_rv and not given_rv:
                raise ApiError(
                    422,
                    "Invalid",
                    f'{rtype.kind} "{name}" is invalid: metadata.resourceVersion: '
                    "Invalid value: 0x0: must be specified for an update",
                )
            if given_rv and given_rv != old["metadata"]["resourceVersion"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {rtype.plural}.{rtype.group} "{name}": '
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again",
                )
            obj = json_copy(new) if copy else dict(new)
            if rtype.has_status:
                if status:
                    obj = {**old, "status": obj.get("status")}
                    if obj["status"] is None:
                        obj.pop("status")
                else:
                    obj.pop("status", None)
                    if "status" in old:
                        obj["status"] = old["status"]
            meta = dict(obj.get("metadata") or {})
            for fixed in ("uid", "creationTimestamp", "generation", "namespace", "name"):
                if fixed in old["metadata"]:
                    meta[fixed] = old["metadata"][fixed]
                else:
                    meta.pop(fixed, None)
            if "deletionTimestamp" in old["metadata"]:
                meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"]
            else:
                meta.pop("deletionTimestamp", None)
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            obj["metadata"] = meta
            if obj == old:
                return json_copy(old) if copy else old
            schema.check(rtype, obj)
            for hook in self.admission:
                obj = hook("UPDATE", rtype, old, obj)
            if obj == old:
                return json_copy(old) if copy else old
            if obj.get("spec") != old.get("spec"):
                meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
            meta["resourceVersion"] = str(self._next_rv())
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                self._store(rtype, key, None)
                self._emit("DELETED", rtype, ns, obj)
                return json_copy(obj) if copy else obj
            _fits(obj)
            self._store(rtype, key, obj)
            self._emit("MODIFIED", rtype, ns, obj)
            return json_copy(obj) if copy else obj

    def delete(
        self, rtype: ResourceType, ns: str, name: str, *, copy: bool = True
    ) -> dict[str, Any]:
        """Delete, or mark for deletion while finalizers remain."""
        with self._lock:
            objects, key = self._of(rtype), (ns, name)
            old = objects.get(key)
            if old is None:
                raise ApiError(404, "NotFound", f'{rtype.plural}.{rtype.group} "{name}" not found')
            meta = old["metadata"]
            if meta.get("finalizers") and meta.get("deletionTimestamp"):
                return json_copy(old) if copy else old
            meta = {**meta, "resourceVersion": str(self._next_rv())}
            obj = {**old, "metadata": meta}
            if meta.get("finalizers"):
                meta["deletionTimestamp"] = _now()
                self._store(rtype, key, obj)
                self._emit("MODIFIED", rtype, ns, obj)
            else:
                self._store(rtype, key, None)
                self._emit("DELETED", rtype, ns, obj)
            return json_copy(obj) if copy else obj

    # --- watch ---------------------------------------------------------------
    def watch(
        self,
        rtype: ResourceType,
        ns: str | None,
        since: int | None,
        selector: str | None,
        until: float,
    ) -> Iterator[Event]:
        """Yield the events after ``since`` until the monotonic time ``until``.

        Their objects are shared: read them, never change them.

        ``since`` None gives synthetic ADDED events for the current objects
        first. A ``since`` older than the event log raises 410.
        """
        import time

        with self._lock:
            if since is None:
                items, since = self.list(rtype, ns, selector)
                pending = [
                    Event(int(o["metadata"]["resourceVersion"]), "ADDED", rtype, ns or "", o)
                    for o in items
                ]
            else:
                oldest = self._events[0].rv if self._events else self._rv + 1
                if since < oldest - 1 and since < self._rv:
                    raise ApiError(
                        410, "Expired", f"too old resource version: {since} ({oldest - 1})"
                    )
                pending = []
        yield from pending
        cursor = since
        changed = self._changed_of(rtype)
        while True:
            with changed:
                while not self._closed:
                    fresh: list[Event] = []
                    for logged in reversed(self._events):  # newest first; stop at the cursor
                        if logged.rv <= cursor:
                            break
                        fresh.append(logged)
                    if fresh:
                        fresh.reverse()
                        break
                    remaining = until - time.monotonic()
                    if remaining <= 0:
                        return
                    changed.wait(min(remaining, 1.0))
                if self._closed:
                    return
            for event in fresh:
                cursor = event.rv
                if (event.rtype.group, event.rtype.plural) != (rtype.group, rtype.plural):
                    continue
                if ns is not None and event.namespace != ns:
                    continue
                if matches_labels(event.obj, selector):
                    yield event
