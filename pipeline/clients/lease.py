"""The watcher's leadership, shown where an admin looks for it: a ``coordination.k8s.io``
Lease.

The lease that decides who leads is the Redis key (``pipeline.store.lease``); this
Lease only mirrors it, as Kubernetes' own controllers show theirs
(``kubectl get lease``): ``holderIdentity`` names the leading watcher
(``host:pid:token``), ``renewTime`` is when it last said so, ``leaseDurationSeconds``
how long that stays true without a renewal, ``leaseTransitions`` how often the
holder changed. A Lease whose ``renewTime`` is older than its duration is stale:
the watcher that wrote it no longer leads, or cannot reach the API server.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from pipeline.clients.k8s_errors import translate
from pipeline.clients.kube import REQUEST_TIMEOUT_S
from pipeline.errors import NotFound

#: The watcher's Lease, in the Workflows' namespace (``pipeline.namespace``).
WATCHER_LEASE = "coral2-pipeline-watch"


def micro_time(when: datetime) -> str:
    """Kubernetes' MicroTime: RFC 3339 with microseconds, in UTC."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseMirror:
    """Writes the Lease ``name`` in ``namespace`` to show who holds a lease kept elsewhere."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        name: str = WATCHER_LEASE,
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.leases = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.request_timeout_s = request_timeout_s

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args, _request_timeout=self.request_timeout_s)
        except (ApiException, Urllib3Error, OSError) as exc:
            raise translate(exc) from exc

    def _read(self) -> dict[str, Any] | None:
        try:
            lease = self._call(self.leases.read_namespaced_lease, self.name, self.namespace)
        except NotFound:
            return None
        result: dict[str, Any] = self.leases.api_client.sanitize_for_serialization(lease)
        return result

    def show(self, holder: str, duration_s: int, now: datetime) -> None:
        """Say that ``holder`` leads as of ``now``, for ``duration_s`` seconds. A holder
        that differs from the Lease's counts a transition and is acquired at ``now``.
        Raises Conflict when another writer changed the Lease since it was read (the next
        call reads it again), a KubeError when the API server refuses or cannot answer."""
        current = self._read()
        spec = dict((current or {}).get("spec") or {})
        if spec.get("holderIdentity") != holder:
            if spec.get("holderIdentity"):
                spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            spec["acquireTime"] = micro_time(now)
        spec.update(
            holderIdentity=holder, leaseDurationSeconds=duration_s, renewTime=micro_time(now)
        )
        if current is None:
            body = {"metadata": {"name": self.name}, "spec": spec}
            self._call(self.leases.create_namespaced_lease, self.namespace, body)
            return
        version = current["metadata"]["resourceVersion"]
        body = {"metadata": {"name": self.name, "resourceVersion": version}, "spec": spec}
        self._call(self.leases.replace_namespaced_lease, self.name, self.namespace, body)

    def release(self, holder: str, now: datetime) -> None:
        """Say nobody leads, if ``holder`` is the one the Lease names (a clean stop)."""
        current = self._read()
        spec = dict((current or {}).get("spec") or {})
        if current is None or spec.get("holderIdentity") != holder:
            return
        spec.update(holderIdentity=None, renewTime=micro_time(now))
        version = current["metadata"]["resourceVersion"]
        body = {"metadata": {"name": self.name, "resourceVersion": version}, "spec": spec}
        self._call(self.leases.replace_namespaced_lease, self.name, self.namespace, body)


__all__ = ["WATCHER_LEASE", "LeaseMirror", "micro_time"]
