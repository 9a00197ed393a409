"""The name a node worker gives its Redis connections (``CLIENT SETNAME``): the nodes it
serves, as a hostlist, after a fixed prefix, so that an operator reading ``CLIENT LIST``
or ``ACL LOG`` sees whose connection it is. Whether a node worker runs is told by its
heartbeat (``pipeline.store.census``), not by this."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.model.hostlist import encode_hostlist

#: The connection name's prefix.
PREFIX = "coral2-node-worker:"


def client_name(hosts: Iterable[str]) -> str:
    """The connection name of a node worker serving ``hosts``."""
    return PREFIX + encode_hostlist(list(hosts))
