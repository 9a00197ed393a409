"""``coral2-pipeline resource drain|undrain`` waits for the flux-bridge's delivery and
says how it went, in one line: delivered to Flux (exit 0), refused by Flux with Flux's
words (exit 1, and a dead letter that ``status`` flags), or not taken at all because no
bridge runs (exit 1: it goes to Flux once one does)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from coral2_sim.flux.delivery import DeliveryThread
from coral2_sim.flux.jobmanager import JobManager

from pipeline.cli import main
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.store import Store

TiB = 2**40


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["resource", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def bridge(aimed: Store) -> Iterator[JobManager]:
    """The bridge's delivery to a simulated Flux of n[0-3], on ``aimed``'s outbox."""
    flux = JobManager(RabbitMapping.build({"rabbit1": (TiB, [f"n{i}" for i in range(4)])}))
    stopping = threading.Event()
    delivery = DeliveryThread(aimed.outbox, flux, "bridge", lambda h: h, stopping).start()
    yield flux
    stopping.set()
    delivery.join(30)


def test_a_drain_flux_takes_is_delivered(
    bridge: JobManager, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "drain", "n1", "bad", "fan")
    assert (code, out) == (0, "drain of n1 delivered to Flux\n")
    assert bridge.resources.drained == {"n1": "bad fan"}


def test_a_drain_flux_refuses_says_why_and_is_kept_as_a_dead_letter(
    bridge: JobManager, aimed: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "drain", "n2", "first")[0] == 0
    code, _, err = run(capsys, "drain", "n2", "again")  # without -u or -f: Flux says no
    assert code == 1
    assert err.startswith("coral2-pipeline resource: the flux-bridge refused the drain of n2")
    assert "Flux refused it: " in err and "already drained" in err
    assert len(err.splitlines()) == 1
    [letter] = aimed.dead_letters.latest(5)
    assert "Flux refused it" in letter.reason


def test_without_a_bridge_it_says_the_request_waits_for_one(
    aimed: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "drain", "--wait", "0.5", "n1")
    assert code == 1
    assert "has not taken it in 0.5 s: is it running?" in err
    assert aimed.outbox.peek(5)[0]  # still queued for the bridge
