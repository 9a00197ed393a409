"""The SLINGSHOT_* environment as the cray-slingshot shell plugin sets it, in its three modes."""

from __future__ import annotations

from typing import Any

from pipeline.model.slingshot import job_environment


def device(name: str, *services: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "services": list(services)}


def svc(ident: int, vnis: list[int], tcs: int = 0xA, **flags: bool) -> dict[str, Any]:
    enabled, system = flags.get("enabled", True), flags.get("system", False)
    return {"id": ident, "enabled": enabled, "system": system, "vnis": vnis, "tcs": tcs}


DEFAULT = svc(1, [1, 10], 0xF, system=True)


def test_an_inherited_environment_is_used_verbatim() -> None:
    inherited = {"SLINGSHOT_VNIS": "1062", "SLINGSHOT_TCS": "0xa", "PATH": "/bin"}
    env = job_environment(inherited=inherited, reservation={"vnis": [2000]}, devices=[])
    assert env == {"SLINGSHOT_VNIS": "1062", "SLINGSHOT_TCS": "0xa"}


def test_a_reservation_matches_each_devices_service_and_ands_the_tcs() -> None:
    devices = [
        device("cxi0", DEFAULT, svc(5, [1062])),
        device("cxi1", DEFAULT, svc(5, [1062], 0xB)),
    ]
    env = job_environment(inherited={}, reservation={"vnis": [1062]}, devices=devices)
    assert env == {
        "SLINGSHOT_VNIS": "1062",
        "SLINGSHOT_DEVICES": "cxi0,cxi1",
        "SLINGSHOT_SVC_IDS": "5,5",
        "SLINGSHOT_TCS": "0xa",
    }


def test_a_device_without_a_matching_service_gets_minus_one() -> None:
    devices = [
        device("cxi0", svc(5, [1062, 1063])),
        device("cxi1", svc(6, [1063, 1062]), svc(7, [1062, 1063], enabled=False)),
    ]
    env = job_environment(inherited={}, reservation={"vnis": [1062, 1063]}, devices=devices)
    assert env["SLINGSHOT_SVC_IDS"] == "5,-1"
    assert env["SLINGSHOT_TCS"] == "0xa"


def test_an_empty_reservation_sets_only_devices_ids_and_tcs() -> None:
    env = job_environment(inherited={}, reservation={"vnis": []}, devices=[device("cxi0")])
    assert env == {"SLINGSHOT_DEVICES": "cxi0", "SLINGSHOT_SVC_IDS": "-1", "SLINGSHOT_TCS": "0xf"}


def test_no_devices_gives_the_vnis_and_full_tcs() -> None:
    env = job_environment(inherited={}, reservation={"vnis": [1024]}, devices=[])
    assert env == {"SLINGSHOT_VNIS": "1024", "SLINGSHOT_TCS": "0xf"}


def test_without_a_reservation_nothing_is_set() -> None:
    assert job_environment(inherited={}, reservation=None, devices=[device("cxi0")]) == {}
