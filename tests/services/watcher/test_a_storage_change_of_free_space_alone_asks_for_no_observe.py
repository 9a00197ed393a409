"""nnf-sos rewrites a rabbit's ``Storage.status.capacity`` (its free space) with every
allocation made or freed, two events a job per rabbit; the health rules read none of it.
The watcher observes a Storage when something else in it changed, and every time it is
added or deleted."""

from __future__ import annotations

from pipeline.clients.k8s import DwsClient
from pipeline.services.watcher import Watcher
from pipeline.states.rabbits import health_view
from pipeline.store import Store
from tests.services.watcher.test_watcher import Recorder, running, wait_for

STORAGE = {
    "metadata": {"name": "rabbit-7"},
    "spec": {"state": "Enabled"},
    "status": {"status": "Ready", "capacity": 1000, "access": {"computes": []}},
}


def storages(rec: Recorder) -> list[str]:
    with rec.lock:
        return [str(k["name"]) for n, k in rec.calls if n == "storage.observe"]


def test_free_space_is_not_part_of_a_storages_health() -> None:
    freer = {**STORAGE, "status": {**STORAGE["status"], "capacity": 10}}
    assert health_view(freer) == health_view(STORAGE)
    down = {**STORAGE, "status": {**STORAGE["status"], "status": "Degraded"}}
    assert health_view(down) != health_view(STORAGE)
    disabled = {**STORAGE, "spec": {"state": "Disabled"}}
    assert health_view(disabled) != health_view(STORAGE)


def test_the_watcher_observes_a_storage_only_when_more_than_its_free_space_changed(
    store: Store, dws: DwsClient
) -> None:
    dws.create("storages", {k: v for k, v in STORAGE.items() if k != "status"})
    dws.patch("storages", "rabbit-7", {"status": STORAGE["status"]}, status=True)
    rec = Recorder()
    with running(Watcher(store, dws, rec, lease_s=1.0)):
        wait_for(lambda: storages(rec) == ["rabbit-7"], "the initial list's observe")
        for free in (900, 800, 1000):  # a job's allocation made, another's, both freed
            dws.patch("storages", "rabbit-7", {"status": {"capacity": free}}, status=True)
        dws.patch("storages", "rabbit-7", {"status": {"status": "Degraded"}}, status=True)
        # events are handled in order: the last one's observe comes after the others'
        wait_for(lambda: len(storages(rec)) >= 2, "the observe of the rabbit's new status")
        assert storages(rec) == ["rabbit-7", "rabbit-7"]
        dws.delete("storages", "rabbit-7")
        wait_for(lambda: len(storages(rec)) == 3, "the observe of the deletion")
