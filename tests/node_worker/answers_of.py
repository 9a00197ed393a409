"""The answers a node worker appended to the answers stream under a key prefix of its own,
in order (unsigned: their JSON bodies' keyword arguments)."""

from __future__ import annotations

import json
from typing import Any

import redis


def answers(redis_url: str, prefix: str) -> list[dict[str, Any]]:
    rows: Any = redis.Redis.from_url(redis_url).xrange(f"{prefix}:answers")
    return [json.loads(fields[b"body"])[1] for _, fields in rows]
