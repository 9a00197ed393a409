"""The answers a node worker appended to its nodes' answers streams under a key prefix of
its own, in the order they were appended (unsigned: their JSON bodies' keyword
arguments)."""

from __future__ import annotations

import json
from typing import Any

import redis


def answers(redis_url: str, prefix: str, name: str | None = None) -> list[dict[str, Any]]:
    """Every answer (of task ``name``), oldest first."""
    client = redis.Redis.from_url(redis_url)
    rows: list[Any] = []
    for key in client.scan_iter(match=f"{prefix}:answers:*"):
        rows += client.xrange(key)
    rows.sort(key=lambda row: tuple(int(part) for part in row[0].split(b"-")))
    return [
        json.loads(fields[b"body"])[1]
        for _, fields in rows
        if name is None or fields[b"task"] == name.encode()
    ]
