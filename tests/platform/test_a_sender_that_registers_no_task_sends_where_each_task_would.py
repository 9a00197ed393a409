"""A sender that registers no task (``create_app(tasks=False)``: the ``hook`` command)
sends each task the hooks and the watcher send by name, to the queue the task itself
is routed to (the table it sends by holds each task's own queue, and keeps no result
as the task keeps none), and loads none of the task modules, the Kubernetes client or
httpx."""

from __future__ import annotations

import json
import subprocess
import sys

import redis

from pipeline.platform.app import create_app
from pipeline.platform.routing import SENT_BY_NAME
from pipeline.settings import load_settings


def test_each_task_sent_by_name_is_routed_as_its_registered_task_is() -> None:
    full = create_app(load_settings(env={}), set_current=False)
    for name, logical in SENT_BY_NAME.items():
        task = full.tasks[name]
        assert task.logical_queue == logical, name
        assert task.ignore_result, name


def test_the_hook_command_loads_no_task_module_nor_client(redis_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    payload = tmp_path / "teardown.json"
    payload.write_text(json.dumps({"jobid": 7}))
    script = (
        "import sys; from pipeline.cli import main; "
        f"status = main(['hook', 'dws.teardown', '--payload', {str(payload)!r}]); "
        "print(sorted({m.split('.')[0] + ('.' + m.split('.')[1] if m.startswith('pipeline.') "
        "and '.' in m else '') for m in sys.modules}), status)"
    )
    env = {"CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url, "PATH": "/usr/bin:/bin"}
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE"] = "sb-lc"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded, status = done.stdout.strip().rsplit(" ", 1)
    assert status == "0", done.stderr
    for heavy in ("kubernetes", "httpx", "pipeline.tasks", "pipeline.clients"):
        assert f"'{heavy}'" not in loaded, heavy
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.llen("sb-lc") == 1  # the request went out, to the queue configured
    finally:
        client.delete("sb-lc")
