"""A signing worker's remote control obeys the management key alone: ``celery inspect``
with that key answers, signed; a command signed by a node's key, or unsigned (as Flower,
which holds no key, sends), is refused and logged — the worker carries on, and no dead
letter is left, since no work was lost."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from pipeline.store import Store
from tests.signed_worker import SignedWorker, signed_worker


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedWorker]:
    with signed_worker(tmp_path_factory.mktemp("control")) as site:
        yield site


def test_inspect_with_the_management_key_answers(worker: SignedWorker) -> None:
    app = worker.app("management", worker.management)
    replies = app.control.inspect(timeout=30, limit=1).ping()
    assert replies is not None
    assert list(replies.values()) == [{"ok": "pong"}]


@pytest.mark.parametrize("sender", ["a node's key", "no key"])
def test_a_shutdown_not_signed_by_the_management_key_is_refused(
    worker: SignedWorker, sender: str
) -> None:
    signer = None
    if sender == "a node's key":  # compute01's own key, as its node worker holds it
        node = worker.node
        signer = replace(
            node,
            key=str(node.key).replace("{host}", "compute01"),
            certificate=str(node.certificate).replace("{host}", "compute01"),
        )
    app = worker.app("management", signer)
    before = worker.log.read_text(errors="replace").count("refused a control command")
    app.control.broadcast("shutdown")

    def refused() -> int:
        return worker.log.read_text(errors="replace").count("refused a control command")

    manager = worker.app("management", worker.management)
    assert manager.send_task("housekeeping.ping", args=["still"]).get(timeout=120) == "still"
    deadline = time.monotonic() + 120  # the refusal's log line may follow the answer
    while refused() == before:
        assert time.monotonic() < deadline, "the worker never refused the command"
        time.sleep(0.2)
    assert worker.process.poll() is None
    assert refused() == before + 1
    store = Store.from_url(worker.url_as("admin"), "coral2")
    assert store.dead_letters.counts() == (0, 0)
    store.close()
