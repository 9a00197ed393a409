"""A watcher whose send of an observe fails (a broker outage) watches on from the last
event it handled: that event is handled again and its observe sent, the events before
it are not handled twice, and none after it is skipped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer
from kombu.exceptions import OperationalError

from pipeline.clients.k8s import DwsClient
from pipeline.services.watcher import Watcher
from pipeline.store import Store
from tests.services.watcher.test_watcher import Recorder, running, wait_for, wf


class FailsOnce(Recorder):
    """Records sends, except the first send for ``jobid``, which fails as a broker would."""

    def __init__(self, jobid: int) -> None:
        super().__init__()
        self.jobid = jobid
        self.failed = 0

    def __call__(self, name: str, kwargs: dict[str, Any]) -> None:
        if kwargs.get("jobid") == self.jobid and not self.failed:
            self.failed += 1
            raise OperationalError("Error 111 connecting to the broker: Connection refused")
        super().__call__(name, kwargs)


@pytest.fixture
def watching(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> Iterator[tuple[DwsClient, FailsOnce]]:
    _, dws = kube
    sends = FailsOnce(jobid=2)
    with running(Watcher(store, dws, sends, lease_s=1.0)):
        key = store.keys.watch_rv("workflows")
        wait_for(lambda: store.client.get(key) is not None, "the initial list")
        yield dws, sends


def test_the_event_whose_send_failed_is_sent_on_the_retry(
    watching: tuple[DwsClient, FailsOnce],
) -> None:
    dws, sends = watching
    for jobid in (1, 2, 3):
        dws.create_workflow(wf(f"fluxjob-{jobid}"))
    # well within the 30-s life of the coalescing mark: the failed send cleared it
    wait_for(lambda: sorted(sends.jobs()) == [1, 2, 3], "every job's observe", timeout_s=10)
    assert sends.failed == 1


def test_events_handled_before_the_failure_are_not_handled_again(
    store: Store, watching: tuple[DwsClient, FailsOnce]
) -> None:
    dws, sends = watching
    dws.create_workflow(wf("fluxjob-1"))
    wait_for(lambda: sends.jobs() == [1], "job 1's observe")
    store.client.delete(store.keys.observe_pending(1))  # as its observe would when it runs
    dws.create_workflow(wf("fluxjob-2"))
    wait_for(lambda: 2 in sends.jobs(), "job 2's observe, on the retry")
    assert sends.failed == 1
    assert sends.jobs() == [1, 2]  # job 1's event was not handled again: no second observe
