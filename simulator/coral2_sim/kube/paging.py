"""Lists in chunks, as kube-apiserver serves them from etcd: ``limit`` and ``continue``.

A list with ``limit`` answers at most that many objects, in key order (namespace, then
name), with ``metadata.continue`` when more remain (and ``remainingItemCount``, unless a
label selector makes the count unknown). Every page of one list shows the store as of its
first page's resourceVersion — a consistent snapshot, as etcd's revisions give — for five
minutes, etcd's compaction interval; a token older than that, or one this server never
issued (it restarted), is answered ``410 Expired`` with a token that goes on from the same
key at the current version (an inconsistent remainder), as the real server does. Tokens
are base64 (URL alphabet, no padding) of ``{"v": "meta.k8s.io/v1", "rv": …, "start": …}``,
and a malformed one is a ``400`` that says why.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from coral2_sim.kube.resources import ApiError

#: How long a list's snapshot serves its next pages (s): etcd's compaction interval.
SNAPSHOT_S = 300.0
#: The most snapshots kept at once (the oldest goes first).
SNAPSHOTS = 64
VERSION = "meta.k8s.io/v1"
INVALID = "continue key is not valid"
EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You "
    "can start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)

Items = list[dict[str, Any]]


def key_of(obj: dict[str, Any]) -> str:
    """An object's key below its resource's prefix: ``<namespace>/<name>`` or ``<name>``."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def encode(rv: int, start: str) -> str:
    raw = json.dumps({"v": VERSION, "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(token: str) -> tuple[int, str]:
    """(resourceVersion, start key) of a continue token; 400 as the real server says."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise _invalid(f"{INVALID}: {exc}") from exc
    if not isinstance(data, dict) or data.get("v") != VERSION:
        version = data.get("v") if isinstance(data, dict) else data
        raise _invalid(f"{INVALID} server does not recognize this encoded version {version!r}")
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv == 0:
        raise _invalid(f"{INVALID}: incorrect encoded start resourceVersion (version {VERSION})")
    if not isinstance(start, str) or not start:
        raise _invalid(f"{INVALID}: encoded start key empty")
    return rv, start


def _invalid(why: str) -> ApiError:
    return ApiError(400, "BadRequest", f"invalid continue token: {why}")


class Pager:
    """The snapshots of the lists in progress, and the pages cut from them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshots: OrderedDict[tuple[Any, ...], tuple[float, Items]] = OrderedDict()

    def page(
        self,
        scope: tuple[Any, ...],
        query: dict[str, str],
        current: tuple[Items, int],
        *,
        counted: bool,
    ) -> tuple[Items, dict[str, Any]]:
        """The page ``query`` asks for of the list ``scope`` (resource, namespace,
        selector), whose current items and resourceVersion are ``current``; return it
        and its list metadata. ``counted``: say how many remain (no label selector)."""
        limit = _limit(query.get("limit"))
        token = query.get("continue")
        items, rv = current
        if not limit and not token:
            return items, {"resourceVersion": str(rv)}
        items = sorted(items, key=key_of)  # etcd's order: the keys' bytes
        start = ""
        if token:
            if query.get("resourceVersion") not in (None, "", "0"):
                raise ApiError(
                    400,
                    "BadRequest",
                    "specifying resource version is not allowed when using continue",
                )
            rv_asked, start = decode(token)
            if rv_asked > 0:
                items = self._snapshot(scope, rv_asked, start)
                rv = rv_asked
        elif limit:
            self._keep(scope, rv, items)
        remaining = [i for i in items if key_of(i) >= start] if start else items
        if not limit or len(remaining) <= limit:
            return remaining, {"resourceVersion": str(rv)}
        chunk = remaining[:limit]
        meta: dict[str, Any] = {
            "resourceVersion": str(rv),
            "continue": encode(rv, key_of(chunk[-1]) + "\x00"),
        }
        if counted:
            meta["remainingItemCount"] = len(remaining) - limit
        return chunk, meta

    def _keep(self, scope: tuple[Any, ...], rv: int, items: Items) -> None:
        with self._lock:
            self._snapshots[(*scope, rv)] = (time.monotonic(), items)
            self._snapshots.move_to_end((*scope, rv))
            while len(self._snapshots) > SNAPSHOTS:
                self._snapshots.popitem(last=False)

    def _snapshot(self, scope: tuple[Any, ...], rv: int, start: str) -> Items:
        with self._lock:
            now = time.monotonic()
            for key in [k for k, (at, _) in self._snapshots.items() if now - at > SNAPSHOT_S]:
                del self._snapshots[key]
            kept = self._snapshots.get((*scope, rv))
        if kept is None:  # compacted away, or issued before this server started
            raise ApiError(410, "Expired", EXPIRED, {"continue": encode(-1, start)})
        return kept[1]


def _limit(text: str | None) -> int:
    if not text:
        return 0
    try:
        return max(0, int(text))
    except ValueError as exc:
        raise ApiError(400, "BadRequest", f"limit: invalid value {text!r}: {exc}") from exc
