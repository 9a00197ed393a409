"""Configuring the pool: its checks and messages, and what a new universe keeps."""

from __future__ import annotations

import pytest

from pipeline.store.vnipool import VniPool


@pytest.mark.parametrize("universe", ["1-10", "1024-65536", "10", "0-5"])
def test_a_universe_with_reserved_or_out_of_range_vnis_is_refused(
    pool: VniPool, universe: str
) -> None:
    with pytest.raises(
        ValueError,
        match=rf"^{universe} contains invalid VNIs, must be a subset of 0,2-9,11-65535$",
    ):
        pool.configure(universe)


def test_a_universe_that_is_not_an_idset_is_a_decode_error(pool: VniPool) -> None:
    with pytest.raises(ValueError, match=r"^decode error: invalid idset 'x-y'"):
        pool.configure("x-y")


def test_the_same_universe_again_keeps_the_cursor(pool: VniPool) -> None:
    pool.configure("1024-1031")
    pool.reserve(1, 2)
    pool.release(1)
    pool.configure("1024-1031")
    assert pool.reserve(2, 1) == [1026]


def test_a_new_universe_keeps_reservations_in_range_and_restarts_the_cursor(
    pool: VniPool,
) -> None:
    pool.configure("1024-1031")
    pool.reserve(1, 2)  # 1024, 1025
    pool.configure("1025-1040")
    assert pool.query()["free"] == "1026-1040"
    assert pool.reserve(2, 1) == [1026]
    pool.release(1)  # 1024 is out of range now: it is dropped, 1025 is free again
    assert pool.query()["free"] == "1025,1027-1040"


def test_a_vni_a_job_holds_is_not_freed_by_coming_back_into_range(pool: VniPool) -> None:
    pool.configure("1024-1027")
    assert pool.reserve(1, 1) == [1024]
    pool.configure("1025-1027")
    pool.configure("1024-1027")
    assert "1024" not in pool.query()["free"].split(",")[0]
    assert pool.reserve(2, 3) == [1025, 1026, 1027]
