"""What the store's streams with a consumer group share (the outbox, the node answers)."""

from __future__ import annotations

import redis

from pipeline.store.connection import store_errors


def ensure_group(client: redis.Redis, key: str, group: str) -> None:
    """Create consumer group ``group`` of stream ``key`` (and the stream), reading from the
    beginning; a group that exists already is left as it is."""
    try:
        client.xgroup_create(key, group, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise store_errors(exc) from exc
    except redis.RedisError as exc:
        raise store_errors(exc) from exc
