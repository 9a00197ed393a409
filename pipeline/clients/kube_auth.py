"""How a Kubernetes client is made: a plain URL with a bearer token, or a kubeconfig (its
credentials looked at again once a second, not before every request)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client, config

from pipeline.errors import ConfigError
from pipeline.model.files import FileProblem, load

__all__ = ["REFRESH_EVERY_S", "USER_AGENT", "api_client"]


#: The User-Agent of our requests (the API server's audit log names us).
USER_AGENT = "coral2-pipeline"


def api_client(
    *,
    host: str | None = None,
    kubeconfig: str | None = None,
    user_agent: str = USER_AGENT,
    token: str | None = None,
) -> client.ApiClient:
    """Return an ApiClient for ``host`` (plain URL, with a bearer ``token`` if given) or a
    kubeconfig (default locations if None)."""
    if host:
        configuration = client.Configuration(host=host)
        if token:
            configuration.api_key = {"authorization": token}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        api = client.ApiClient(configuration)
    else:
        if kubeconfig is not None:  # one clear line for a file that is no kubeconfig
            documents = load(kubeconfig, "kubeconfig", "yaml", max_bytes=16 * 1024 * 1024)
            if len(documents) != 1 or not isinstance(documents[0], dict):
                raise FileProblem(f"kubeconfig {kubeconfig!r} is not one YAML mapping")
        try:
            api = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig
            )
        except (config.ConfigException, OSError, ValueError) as exc:
            where = kubeconfig or "the default kubeconfig ($KUBECONFIG, ~/.kube/config)"
            raise ConfigError(
                f"cannot use {where}: {exc}; set pipeline.kubeconfig to a readable "
                "kubeconfig, or pipeline.api_host to the API server's URL"
            ) from None
        hook = api.configuration.refresh_api_key_hook
        if hook is not None:
            api.configuration.refresh_api_key_hook = _at_most_every(REFRESH_EVERY_S, hook)
    api.user_agent = user_agent
    return api


def without_retries(api: client.ApiClient) -> client.ApiClient:
    """``api`` whose requests urllib3 does not try again (it tries each three more times by
    default): a one-shot command's request that times out ends it at once."""
    pool_kw = api.rest_client.pool_manager.connection_pool_kw
    pool_kw["retries"] = False
    return api


#: How often a kubeconfig's credentials are looked at again (s).
REFRESH_EVERY_S = 1.0


def _at_most_every(period_s: float, hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """``hook`` (the kubeconfig loader's: it loads a token again once it is within five
    minutes of its expiry, then sets the client's whole configuration again, this hook
    included) run at most once every ``period_s`` instead of before every request (a few
    per cent of a busy worker's CPU); a token is still renewed minutes before it expires."""
    lock = threading.Lock()
    inner = hook
    next_at = 0.0

    def refresh(configuration: Any) -> None:
        nonlocal inner, next_at
        if time.monotonic() < next_at:
            return
        with lock:
            if time.monotonic() < next_at:
                return
            inner(configuration)
            # the loader installs a fresh copy of its hook each time: run that one next
            if configuration.refresh_api_key_hook not in (None, refresh):
                inner = configuration.refresh_api_key_hook
            configuration.refresh_api_key_hook = refresh
            next_at = time.monotonic() + period_s

    return refresh
