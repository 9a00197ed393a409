"""A job's CXI service limits are flux slingshot prolog's, scaled by the node's cores."""

from __future__ import annotations

from pipeline.model.slingshot import service_limits

CASSINI = {
    "txqs": 1024, "tgqs": 512, "eqs": 2047, "cts": 2047,
    "tles": 2048, "ptes": 2048, "les": 16384, "acs": 1022,
}  # fmt: skip


def test_a_96_core_node_on_a_cassini_nic() -> None:
    assert service_limits(96, CASSINI) == {
        "txqs": (1024, 192),
        "tgqs": (512, 96),
        "eqs": (2047, 192),
        "cts": (2047, 96),
        "tles": (96, 96),
        "ptes": (2048, 576),
        "les": (16384, 1536),
        "acs": (1022, 192),
    }


def test_reservations_never_exceed_the_maxima_on_a_huge_node() -> None:
    limits = service_limits(4096, CASSINI)
    assert all(reserved == most for most, reserved in limits.values())
    assert limits["tles"] == (2048, 2048)


def test_a_resource_the_nic_does_not_report_is_zero() -> None:
    assert service_limits(8, {"txqs": 16})["les"] == (0, 0)
    assert service_limits(8, {"txqs": 16})["txqs"] == (16, 16)


def test_zero_cores_reserve_nothing() -> None:
    assert all(reserved == 0 for _, reserved in service_limits(0, CASSINI).values())
