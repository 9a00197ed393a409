"""``coral2-pipeline flower`` runs with no private key, as the ``flower`` Redis user,
behind basic auth: it shows the tasks that signing workers ran (from the events
``task_events`` makes them send) and their queues on its Broker page, and it can make
no worker act — a control command sent with its user is unsigned, and the workers
refuse it. Without authentication, or with a signing key, it refuses to start (exit 3)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from coral2_sim.keys import demo_signers
from coral2_sim.redis_server import free_port

from tests.http_service import wait_until_served
from tests.signed_worker import SignedWorker, signed_worker, spawn

AUTH = ("admin", "flower-password")


@dataclass
class Site:
    worker: SignedWorker
    url: str  # Flower's


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    work = tmp_path_factory.mktemp("flower")
    with signed_worker(work) as worker:
        port = free_port()
        env = worker.env("flower") | {"FLOWER_BASIC_AUTH": ":".join(AUTH)}
        argv = ["flower", "--", "--address=127.0.0.1", f"--port={port}"]
        flower = spawn(argv, env, work / "flower.log")
        url = f"http://127.0.0.1:{port}"
        wait_until_served(url, flower, work / "flower.log")
        site = Site(worker, url)
        wait_until_listening(site)
        yield site
        flower.terminate()
        flower.wait(timeout=60)


def wait_until_listening(site: Site) -> None:
    """Flower serves its pages before its event receiver has joined the workers' event
    exchange, and a task's name comes only with its task-received event: pings go until
    Flower has seen one of them at all."""
    app = site.worker.app("management", site.worker.management)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        sent = app.send_task("housekeeping.ping", args=["listening?"])
        assert sent.get(timeout=120) == "listening?"
        time.sleep(0.5)
        if sent.id in httpx.get(f"{site.url}/api/tasks", auth=AUTH, timeout=30).json():
            return
    raise AssertionError("Flower saw none of the pings sent in 120 s")


def test_flower_shows_a_task_a_signing_worker_ran(site: Site) -> None:
    app = site.worker.app("management", site.worker.management)
    sent = app.send_task("housekeeping.ping", args=["flower"])
    assert sent.get(timeout=120) == "flower"
    deadline = time.monotonic() + 120
    while True:  # the task's events arrive one by one: its name with task-received
        tasks = httpx.get(f"{site.url}/api/tasks", auth=AUTH, timeout=30).json()
        seen = tasks.get(sent.id) or {}
        if (seen.get("name") and seen.get("state") == "SUCCESS") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert tasks[sent.id]["name"] == "housekeeping.ping"
    assert tasks[sent.id]["state"] == "SUCCESS"


def test_its_broker_page_shows_the_queues(site: Site) -> None:
    page = httpx.get(f"{site.url}/broker", auth=AUTH, timeout=30)
    assert page.status_code == 200
    assert "lifecycle" in page.text


def test_it_serves_nothing_without_the_password(site: Site) -> None:
    assert httpx.get(f"{site.url}/api/tasks", timeout=30).status_code == 401


def test_a_control_command_sent_as_its_user_is_refused_by_the_workers(site: Site) -> None:
    worker = site.worker
    worker.app("flower").control.broadcast("shutdown")  # Flower's "shut down" button's
    app = worker.app("management", worker.management)
    assert app.send_task("housekeeping.ping", args=["after"]).get(timeout=120) == "after"
    deadline = time.monotonic() + 120  # the refusal's log line may follow the answer
    while "refused a control command" not in worker.log.read_text(errors="replace"):
        assert time.monotonic() < deadline, "the workers never refused the command"
        time.sleep(0.2)
    assert worker.process.poll() is None


def refusal(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CORAL2_", "FLOWER_"))}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "flower"],
        env=base | env,
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def test_it_refuses_to_start_without_authentication() -> None:
    done = refusal({})
    assert done.returncode == 3
    assert "FLOWER_BASIC_AUTH" in done.stderr


def test_it_refuses_to_start_with_a_signing_key(tmp_path: Path) -> None:
    management, _ = demo_signers(tmp_path / "keys")
    done = refusal({"FLOWER_BASIC_AUTH": "a:b", **management.env()})
    assert done.returncode == 3
    assert "Flower runs without a signing key" in done.stderr


def test_a_workers_page_says_what_it_cannot_show_without_asking_the_worker(site: Site) -> None:
    log = site.worker.log.parent / "flower.log"
    before = log.read_text(errors="replace").count("WARNING")
    page = httpx.get(f"{site.url}/worker/celery@<b>node</b>", auth=AUTH, timeout=30)
    assert page.status_code == 200
    assert "holds no signing key" in page.text and "coral2-pipeline status" in page.text
    assert "<b>node</b>" not in page.text  # the name is shown escaped
    assert log.read_text(errors="replace").count("WARNING") == before  # nothing was asked
