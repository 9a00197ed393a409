"""A rabbit's capacity is the sum of its drives' ``status.devices[].capacity``, as
flux-coral2 computes it since its #497 and #501 — ``status.capacity`` is the space not
allocated. When the drives' total less what every Server holds is not
``status.capacity``, one warning line says so and the drives' total is used; a Storage
that lists no drive capacity (an older DWS) gives ``status.capacity``."""

from __future__ import annotations

from typing import Any

from pipeline.model.rabbitmap_build import build_mapping

TiB = 2**40
CONFIG = {"spec": {"storageNodes": [{"name": "tuolumne209", "computesAccess": [{"name": "t1"}]}]}}


def storage(free: float, drives: list[float] | None) -> dict[str, Any]:
    status: dict[str, Any] = {"capacity": int(free * TiB), "access": {"computes": [{"name": "t1"}]}}
    if drives is not None:
        status["devices"] = [
            {"slot": str(i), "capacity": int(d * TiB), "status": "Ready"}
            for i, d in enumerate(drives)
        ] + [{"slot": "99", "status": "Offline"}]  # a failed drive lists no capacity
    return {"metadata": {"name": "tuolumne209"}, "status": status}


def server(name: str, tib: float) -> dict[str, Any]:
    storage_ = [{"name": "tuolumne209", "allocationCount": 1}]
    return {
        "metadata": {"name": name},
        "spec": {"allocationSets": [{"allocationSize": int(tib * TiB), "storage": storage_}]},
    }


def capacity(
    storages: list[dict[str, Any]], servers: list[dict[str, Any]]
) -> tuple[int, list[str]]:
    lines: list[str] = []
    mapping = build_mapping(CONFIG, storages, servers, warn=lines.append)
    return mapping["rabbits"]["tuolumne209"]["capacity"], lines


def test_the_drives_total_is_the_capacity_and_a_gap_allocations_do_not_explain_warns() -> None:
    drives = [24.82 / 8] * 8
    total, lines = capacity([storage(21.69, drives)], [])
    assert total == sum(int(d * TiB) for d in drives)
    assert len(lines) == 1
    assert "tuolumne209" in lines[0] and "24.82 TiB" in lines[0] and "21.69 TiB" in lines[0]


def test_free_space_that_allocations_explain_is_no_warning() -> None:
    total, lines = capacity([storage(3.0, [2.0, 2.0])], [server("fluxjob-7", 1.0)])
    assert total == 4 * TiB
    assert lines == []


def test_another_workload_managers_server_is_subtracted_from_the_total() -> None:
    total, lines = capacity([storage(3.0, [2.0, 2.0])], [server("slurm-99", 1.0)])
    assert total == 3 * TiB
    assert lines == []


def test_a_storage_without_drive_capacities_gives_its_status_capacity() -> None:
    total, lines = capacity([storage(5.0, None)], [])
    assert total == 5 * TiB
    assert lines == []
