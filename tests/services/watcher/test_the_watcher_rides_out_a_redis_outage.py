"""A Redis outage neither kills the watcher's threads nor leaves it believing it leads:
it stops leading, warns, and enqueues again once Redis is back."""

from __future__ import annotations

import time

from coral2_sim.kube.api import KubeApiServer
from coral2_sim.redis_server import RedisServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.services.watcher import Watcher
from pipeline.store import Store
from tests.services.watcher.test_watcher import Recorder, running, wait_for, wf


def test_the_watcher_stops_leading_in_an_outage_and_enqueues_after_it() -> None:
    with RedisServer() as redis_server, KubeApiServer() as server:
        store = Store.from_url(redis_server.url, "outage")
        api = client.ApiClient(client.Configuration(host=server.url))
        try:
            ride_out_an_outage(redis_server, store, DwsClient(api, outage_budget_s=1))
        finally:
            api.close()
            store.client.close()


def ride_out_an_outage(redis_server: RedisServer, store: Store, dws: DwsClient) -> None:
    rec = Recorder()
    watcher = Watcher(store, dws, rec, lease_s=0.6)
    with running(watcher):
        dws.create_workflow(wf("fluxjob-61"))
        wait_for(lambda: rec.jobs() == [61], "the observe before the outage")
        redis_server.stop()
        wait_for(lambda: not watcher.leading, "the watcher to stop leading", timeout_s=10)
        dws.create_workflow(wf("fluxjob-62"))  # happens while Redis is down
        time.sleep(0.5)
        redis_server.start()  # empty: it keeps nothing on disk
        wait_for(lambda: watcher.leading, "the watcher to lead again", timeout_s=20)
        wait_for(lambda: 62 in rec.jobs(), "the observe of the change made meanwhile", 20)
