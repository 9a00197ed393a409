"""The name a node worker gives its Redis connections (``CLIENT SETNAME``): the nodes it
serves, as a hostlist, after a fixed prefix. ``coral2-pipeline status`` finds the node
workers that are connected in ``CLIENT LIST`` by it, with no heartbeat of theirs: at
11,136 nodes a node worker sends nothing while idle but its blocking read."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.errors import HostlistError
from pipeline.model.hostlist import encode_hostlist, expand_hostlist

#: The connection name's prefix.
PREFIX = "coral2-node-worker:"


def client_name(hosts: Iterable[str]) -> str:
    """The connection name of a node worker serving ``hosts``."""
    return PREFIX + encode_hostlist(list(hosts))


def hosts_of(name: str) -> list[str]:
    """The nodes a connection named ``name`` serves ([] for another client's name)."""
    if not name.startswith(PREFIX):
        return []
    try:
        return expand_hostlist(name.removeprefix(PREFIX))
    except HostlistError:
        return []
