"""A failed job's prolog waits while the pipeline's exception is still on its way to Flux
(the bridge down or behind), so that the job fails with the pipeline's reason rather
than the prolog's own status; once the exception is delivered, it waits only the grace."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.cli import main
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage


def raise_exception(store: Store, jobid: int, note: str) -> str:
    payload = {"id": jobid, "type": "cray-slingshot", "severity": 0, "note": note}
    entry = store.outbox.append_once(
        OutboxMessage("exception", jobid, payload), "exception:cray-slingshot"
    )
    assert entry is not None
    return entry


def test_the_exception_is_on_its_way_until_the_bridge_delivers_it(aimed: Store) -> None:
    assert aimed.exceptions_on_their_way(5150) == []
    entry = raise_exception(aimed, 5150, "VNI count must be within 1-4")
    assert aimed.exceptions_on_their_way(5150) == [entry]
    aimed.outbox.ack(entry)  # what the bridge does once Flux took it
    assert aimed.exceptions_on_their_way(5150) == []


def test_a_mark_set_without_a_message_is_not_an_exception_on_its_way(aimed: Store) -> None:
    aimed.marks.once(5151, "exception:dws")
    assert aimed.exceptions_on_their_way(5151) == []


def test_the_prolog_exits_only_after_the_exception_is_delivered(
    aimed: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = raise_exception(aimed, 5152, "VNI count must be within 1-4")
    aimed.releases.put(5152, 1, "VNI count must be within 1-4")
    codes: list[int] = []
    ended_at: list[float] = []

    def run() -> None:
        codes.append(main(["flux-prolog", "--jobid", "5152", "--grace", "0"]))
        ended_at.append(time.monotonic())

    prolog = threading.Thread(target=run)
    prolog.start()
    prolog.join(timeout=2.0)
    assert prolog.is_alive(), "the prolog exited while the exception was undelivered"
    delivered_at = time.monotonic()
    aimed.outbox.ack(entry)
    prolog.join(timeout=60)
    assert codes == [1]
    assert ended_at[0] >= delivered_at
    assert capsys.readouterr().err == "flux-prolog: VNI count must be within 1-4\n"
