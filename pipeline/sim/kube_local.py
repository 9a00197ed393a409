"""The official kubernetes client, answered in-process by the simulated API server.

The simulated DWS controller runs inside the API server's process. Over
HTTP, every call it makes costs two HTTP stacks, a socket round trip and a
server thread on the same cores that the pipeline under test needs — as
much CPU per job as the whole pipeline spends. :func:`local_api_client`
gives it a ``kubernetes.client.ApiClient`` whose REST layer hands each
request to :class:`~pipeline.sim.kube_routes.Routes` directly: the same
answers (status codes, ``Status`` bodies, faults), without the wire.
Watches are streams, so they still go over HTTP to the same server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client
from kubernetes.client import rest

from pipeline.sim.kube_api import KubeApiServer
from pipeline.sim.kube_routes import Routes
from pipeline.sim.kube_store import ApiError


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
        parts = urlsplit(url)
        try:
            route = self.routes.route(parts.path, parts.query)
            if method == "GET" and route.is_watch:  # a stream: the server takes its faults
                wire: rest.RESTResponse = super().request(  # type: ignore[no-untyped-call]
                    method, url, headers, body, post_params, _request_timeout
                )
                return wire
            self.routes.take_fault(method)
            content_type = ((headers or {}).get("Content-Type") or "").split(";")[0].strip()
            # the store copies what it keeps and what it returns, so body is never shared
            code, answer = self.routes.answer(method, route, content_type, body)
        except ApiError as exc:
            code, answer = exc.code, exc.status()
        data = json.dumps(answer).encode()
        return rest.RESTResponse(_Answer(code, HTTPStatus(code).phrase, data))


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
