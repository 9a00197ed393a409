"""A node's user may only read its task queue and put back onto it, so it cannot make the
queue a string (``SET node.<itself> x`` is refused). And should such a key be there all
the same (an ACL of an older release allowed it), it costs that node alone: redelivery
deletes it, flags the node, says so in a dead letter and sends both that node's and
every other node's lost copies in the same pass; the exporter says Redis is up and
``status`` names the node."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest
import redis

from pipeline.cli.exporter_cmd import PipelineCollector
from pipeline.cli.status_flags import pipeline_flags
from pipeline.platform.acl import acl_file
from pipeline.platform.sending import settings_of
from pipeline.store.report import pipeline_view
from tests.tasks.eager_app import eager_app, store_of_app


def test_the_node_user_cannot_make_its_queue_a_string(tmp_path: Path, redis_url: str) -> None:
    app = eager_app(tmp_path, redis_url, "http://127.0.0.1:9")
    store = store_of_app(app)
    user = f"node-{uuid.uuid4().hex[:8]}"
    line = acl_file(settings_of(app), {}, nodes={user: (["n1"], "pw")}).splitlines()[-1]
    store.client.execute_command("ACL", "SETUSER", user, *re.findall(r"\([^)]*\)|\S+", line)[2:])
    port = store.client.connection_pool.connection_kwargs["port"]
    try:
        with redis.Redis(port=port, username=user, password="pw") as node:
            for command in (("SET", "node.n1", "x"), ("SETEX", "node.n1", "9", "x")):
                with pytest.raises(redis.exceptions.NoPermissionError):
                    node.execute_command(*command)
            with pytest.raises(redis.exceptions.NoPermissionError):
                node.xadd("node.n1", {"a": "b"})  # a stream there: no more
            assert node.lpush("node.n1", "x") == 1  # what it may: put back onto a list
    finally:
        store.client.execute_command("ACL", "DELUSER", user)
        store.client.delete("node.n1")


def test_a_queue_that_is_a_string_is_set_aside_and_every_lost_copy_goes_out(
    tmp_path: Path, redis_url: str
) -> None:
    app = eager_app(tmp_path, redis_url, "http://127.0.0.1:9")
    store = store_of_app(app)
    store.client.delete("node.n1", "node.n2")
    store.client.set("node.n1", "x")
    copies = {host: f"lost-{host}-{uuid.uuid4().hex}" for host in ("n1", "n2")}
    notes = [
        (task_id, "node.prolog", {"jobid": 5, "hostname": host}, f"node.{host}")
        for host, task_id in copies.items()
    ]
    store.ledger.note_all(notes, now=time.time() - 1000, resend_after_s=1.0)
    app.tasks["housekeeping.redeliver"].apply(throw=True)
    for host, task_id in copies.items():
        held = [json.loads(m)["headers"]["id"] for m in store.client.lrange(f"node.{host}", 0, -1)]
        assert held == [task_id], host
    assert "node.n1 was a string, not a list" in store.answers.flagged()["n1"][1]
    (letter,) = store.dead_letters.latest(1)
    assert letter.where == "n1:node.n1"
    (up, *_) = PipelineCollector(settings_of(app), store).collect()
    assert up.samples[0].value == 1
    flags = [f.text for f in pipeline_flags(pipeline_view(store), 120.0, None, {})]
    assert any(text.startswith("node n1") for text in flags), flags
    store.client.delete("node.n1", "node.n2")
