"""A task sent by name lands in the queue of its logical queue, and only there.

Sites run separate workers per queue (a timeouts worker must not wait
behind a lifecycle backlog), so a message in the wrong queue — or in all
of them — is a real fault. This talks to a real Redis broker with queue
names no worker consumes, and counts what each queue holds.
"""

from __future__ import annotations

import redis

from pipeline.platform.app import create_app
from pipeline.settings import load_settings


def test_each_task_lands_in_its_own_queue_once(redis_url: str) -> None:
    names = {"lifecycle": "rt-lc", "timeouts": "rt-to", "housekeeping": "rt-hk"}
    env = {"CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url}
    env |= {f"CORAL2_PIPELINE_PIPELINE__QUEUES__{k.upper()}": v for k, v in names.items()}
    app = create_app(load_settings(env=env), set_current=False)
    app.send_task("housekeeping.ping", args=["x"])
    app.send_task("dws.observe", kwargs={"jobid": 1})
    app.send_task("dws.resync")
    app.send_task("timeouts.fire", kwargs={"jobid": 1, "kind": "k", "token": "t"})
    client = redis.Redis.from_url(redis_url)
    try:
        counts = {logical: client.llen(queue) for logical, queue in names.items()}
    finally:
        client.delete(*names.values())
    assert counts == {"lifecycle": 1, "timeouts": 1, "housekeeping": 2}
