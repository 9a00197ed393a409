"""Reservations follow flux-coral2's vnipool: round robin, wrapping, its counts and messages."""

from __future__ import annotations

import pytest

from pipeline.errors import VniError
from pipeline.model.jobid import encode_f58
from pipeline.store.vnipool import VniPool


def test_each_reservation_starts_after_the_last_vni_handed_out(pool: VniPool) -> None:
    pool.configure("1024-1031")
    assert pool.reserve(1, 2) == [1024, 1025]
    assert pool.reserve(2, 1) == [1026]
    pool.release(1)
    assert pool.reserve(3, 2) == [1027, 1028]  # freed 1024-1025 come back last


def test_the_round_robin_wraps_to_the_lowest_free_vni(pool: VniPool) -> None:
    pool.configure("1024-1027")
    assert pool.reserve(1, 3) == [1024, 1025, 1026]
    pool.release(1)
    assert pool.reserve(2, 2) == [1027, 1024]


def test_a_short_pool_reserves_nothing_and_says_how_many_are_left(pool: VniPool) -> None:
    pool.configure("1024-1026")
    pool.reserve(1, 2)
    with pytest.raises(VniError, match=r"^failed to reserve 2 VNIs \(1 available\)$"):
        pool.reserve(2, 2)
    assert pool.query()["free"] == "1026"
    pool.reserve(3, 1)
    with pytest.raises(VniError, match=r"^failed to reserve 1 VNI \(0 available\)$"):
        pool.reserve(4, 1)


@pytest.mark.parametrize("count", [-1, 5, 100])
def test_a_count_out_of_range_is_refused(pool: VniPool, count: int) -> None:
    pool.configure("1024-65535")
    with pytest.raises(VniError, match=r"^VNI count must be within 1-4$"):
        pool.reserve(1, count)


def test_a_count_of_zero_holds_an_empty_reservation(pool: VniPool) -> None:
    pool.configure("1024-65535")
    assert pool.reserve(9, 0) == []
    assert pool.query()["jobs"] == {encode_f58(9): []}
    pool.release(9)
    assert pool.query()["jobs"] == {}


def test_a_job_reserving_again_gets_the_same_vnis(pool: VniPool) -> None:
    pool.configure("1024-65535")
    first = pool.reserve(5, 2)
    assert pool.reserve(5, 2) == first
    assert pool.query()["free"] == "1026-65535"


def test_releasing_an_unknown_job_names_it_in_f58(pool: VniPool) -> None:
    pool.configure("1024-65535")
    with pytest.raises(VniError, match=rf"^unknown job {encode_f58(77)}$"):
        pool.release(77)


def test_the_query_shows_universe_free_and_jobs_as_ranged_idsets(pool: VniPool) -> None:
    pool.configure("1024-65535")
    pool.reserve(1, 1)
    pool.reserve(2, 2)
    pool.release(1)
    assert pool.query() == {
        "universe": "1024-65535",
        "free": "1024,1027-65535",
        "jobs": {encode_f58(2): [1025, 1026]},
        "quarantine": {},
    }
