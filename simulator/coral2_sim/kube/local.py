"""The official kubernetes client, answered in-process by the simulated API server.

The simulated DWS controller runs inside the API server's process. Over
HTTP, every call it makes costs two HTTP stacks, a socket round trip and a
server thread on the same cores that the pipeline under test needs — as
much CPU per job as the whole pipeline spends. Two ways in, both answering
through :class:`~coral2_sim.kube.routes.Routes` (the same status codes,
``Status`` bodies and faults as over HTTP):

* :func:`local_api_client`: a ``kubernetes.client.ApiClient`` whose REST
  layer hands each request to the routes; everything above it is the
  official client's. Its watches still go over HTTP.
* :class:`DirectCustomObjects`: the official ``CustomObjectsApi`` with the
  calls a controller makes — get, list, watch, create, replace, patch,
  delete — answered by the routes without the client's request and
  response layers (most of what a local get costs), and watches
  read from the store's event log. :func:`local_dws_client` is the
  simulated controller's ``DwsClient`` over it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from kubernetes import client
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError

from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.patch import json_copy
from coral2_sim.kube.resources import ApiError
from coral2_sim.kube.routes import Fault, Routes
from pipeline.clients.k8s import DwsClient


@dataclass
class _Answer:
    """What ``rest.RESTResponse`` reads from a urllib3 response."""

    status: int
    reason: str
    data: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


class LocalRest(rest.RESTClientObject):
    """The client's REST layer, answering from :class:`Routes` (watches: over HTTP)."""

    def __init__(self, configuration: client.Configuration, routes: Routes) -> None:
        super().__init__(configuration)
        self.routes = routes

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> rest.RESTResponse:
        """Answer one request as the HTTP server would."""
        refuse_if_down(self.routes, url)
        parts = urlsplit(url)
        try:
            route = self.routes.route(parts.path, parts.query)
            if method == "GET" and route.is_watch:  # a stream: the server takes its faults
                wire: rest.RESTResponse = super().request(  # type: ignore[no-untyped-call]
                    method, url, headers, body, post_params, _request_timeout
                )
                return wire
            self.routes.take_fault(method, parts.path)
            content_type = ((headers or {}).get("Content-Type") or "").split(";")[0].strip()
            # the store may keep what it is handed: the caller's body stays the caller's
            # (the answer is serialized below, which copies it)
            given = None if body is None else json_copy(body)
            code, answer = self.routes.answer(method, route, content_type, given)
        except ApiError as exc:
            code, answer = exc.code, exc.status()
        data = json.dumps(answer).encode()
        return rest.RESTResponse(_Answer(code, HTTPStatus(code).phrase, data))


def refuse_if_down(routes: Routes, url: str) -> None:
    """Raise what urllib3 raises for a refused connection while the server restarts
    (:meth:`~coral2_sim.kube.api.KubeApiServer.restart`), as an HTTP client would see."""
    if routes.down:
        refused = NewConnectionError(None, "Connection refused (the API server restarts)")  # type: ignore[arg-type]
        raise MaxRetryError(None, url, refused)  # type: ignore[arg-type]


class _LocalApiClient(client.ApiClient):
    """The official ApiClient, minus its walk over every request body.

    ``sanitize_for_serialization`` rebuilds a body dict by dict to turn
    models and datetimes into JSON, and the controller PUTs whole Workflows
    many times per job. Every body sent from here is
    already a JSON value, so it goes as it is; anything else still gets the
    walk. (Should a model or datetime ever hide inside a dict, the store's
    answer would not serialize, and the call would fail loudly.)
    """

    def sanitize_for_serialization(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, dict | list | str | int | float | bool):
            return obj
        return super().sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]


def local_api_client(server: KubeApiServer) -> client.ApiClient:
    """An ApiClient for code running in ``server``'s process (watches still use HTTP)."""
    configuration = client.Configuration(host=server.url)
    api = _LocalApiClient(configuration)
    api.rest_client = LocalRest(configuration, server.routes)
    return api


#: Keyword arguments of the list calls → their query parameters.
_QUERY = {
    "label_selector": "labelSelector",
    "limit": "limit",
    "_continue": "continue",
    "resource_version": "resourceVersion",
    "timeout_seconds": "timeoutSeconds",
    "watch": "watch",
    "allow_watch_bookmarks": "allowWatchBookmarks",
}


class _WatchStream:
    """What the official ``Watch`` reads from a response: ``status``, ``stream()``, ``close()``.

    A ``drop_watch`` fault breaks it after its first event, as the HTTP
    server breaks the connection: the reader gets urllib3's ProtocolError.
    """

    status = 200

    def __init__(self, lines: Iterator[bytes], fault: Fault | None) -> None:
        self._lines = lines
        self._fault = fault

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        for line in self._lines:
            yield line
            if self._fault is not None and self._fault.drop_watch:
                raise ProtocolError("injected fault: the watch connection broke")

    def close(self) -> None:
        close = getattr(self._lines, "close", None)
        if close is not None:
            close()

    def release_conn(self) -> None:
        """Nothing to release: no connection."""


class DirectCustomObjects(client.CustomObjectsApi):
    """``CustomObjectsApi`` whose common calls go straight to the routes (module docstring).

    Results are copies, as a parsed HTTP answer would be;
    errors are the ``ApiException`` the official client raises, with the
    same status and ``Status`` body. Options the simulated server does not
    act on (``dry_run``, ``_request_timeout``, …) are ignored, as it ignores
    them over HTTP; the overrides take the object's coordinates
    positionally and every option by keyword (hence ``type: ignore[override]``).
    Calls not overridden here keep the official path.
    """

    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api)
        rest_client = api.rest_client
        if not isinstance(rest_client, LocalRest):
            raise TypeError("DirectCustomObjects needs an ApiClient from local_api_client()")
        self.routes = rest_client.routes

    def _answer(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        params = {_QUERY[k]: _text(v) for k, v in (query or {}).items() if v not in (None, "")}
        refuse_if_down(self.routes, path)
        try:
            route = self.routes.route(path, urlencode(params))
            fault = self.routes.take_fault(method, path)
            if method == "GET" and route.is_watch:
                return _WatchStream(self.routes.watch_lines(route, fault), fault)
            # the store may keep what it is handed, and its answer shares what it keeps:
            # a copy each way, as the wire would make
            given = None if body is None else json_copy(body)
            return json_copy(self.routes.answer(method, route, content_type, given)[1])
        except ApiError as exc:
            error = ApiException(status=exc.code, reason=HTTPStatus(exc.code).phrase)
            error.body = json.dumps(exc.status())
            raise error from None

    # --- the calls a controller makes ------------------------------------------------
    def get_namespaced_custom_object(  # type: ignore[override]
        self, group: str, version: str, namespace: str, plural: str, name: str, **_: Any
    ) -> Any:
        return self._answer("GET", _path(group, version, namespace, plural, name))

    def list_namespaced_custom_object(  # type: ignore[override]
        self, group: str, version: str, namespace: str, plural: str, **kwargs: Any
    ) -> Any:
        return self._list(_path(group, version, namespace, plural), kwargs)

    def list_cluster_custom_object(  # type: ignore[override]
        self, group: str, version: str, plural: str, **kwargs: Any
    ) -> Any:
        return self._list(_path(group, version, None, plural), kwargs)

    def _list(self, path: str, kwargs: dict[str, Any]) -> Any:
        query = {k: v for k, v in kwargs.items() if k in _QUERY}
        return self._answer("GET", path, query)

    def create_namespaced_custom_object(  # type: ignore[override]
        self, group: str, version: str, namespace: str, plural: str, body: Any, **_: Any
    ) -> Any:
        return self._answer("POST", _path(group, version, namespace, plural), body=body)

    def replace_namespaced_custom_object(  # type: ignore[override]
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        body: Any,
        **_: Any,
    ) -> Any:
        return self._answer("PUT", _path(group, version, namespace, plural, name), body=body)

    def patch_namespaced_custom_object(  # type: ignore[override]
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        body: Any,
        _content_type: str | None = None,
        **_: Any,
    ) -> Any:
        path = _path(group, version, namespace, plural, name)
        return self._answer("PATCH", path, body=body, content_type=_patch_type(_content_type))

    def patch_namespaced_custom_object_status(  # type: ignore[override]
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        body: Any,
        _content_type: str | None = None,
        **_: Any,
    ) -> Any:
        path = _path(group, version, namespace, plural, name) + "/status"
        return self._answer("PATCH", path, body=body, content_type=_patch_type(_content_type))

    def delete_namespaced_custom_object(  # type: ignore[override]
        self, group: str, version: str, namespace: str, plural: str, name: str, **_: Any
    ) -> Any:
        return self._answer("DELETE", _path(group, version, namespace, plural, name))


def _path(group: str, version: str, namespace: str | None, plural: str, name: str = "") -> str:
    where = f"/namespaces/{quote(namespace, safe='')}" if namespace is not None else ""
    tail = f"/{quote(name, safe='')}" if name else ""
    return f"/apis/{group}/{version}{where}/{plural}{tail}"


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _patch_type(content_type: str | None) -> str:
    """The official client's default for a custom-object patch: a JSON merge patch."""
    return (content_type or "application/merge-patch+json").split(";")[0].strip()


def local_dws_client(
    server: KubeApiServer, *, namespace: str = "default", outage_budget_s: float = 5.0
) -> DwsClient:
    """The simulated controller's ``DwsClient``: its custom-object calls answered directly."""
    dws = DwsClient(local_api_client(server), namespace=namespace, outage_budget_s=outage_budget_s)
    dws.custom = DirectCustomObjects(dws.api)
    return dws
