"""After the store lost its reservations, a job's VNIs as Flux names them (its
``cray-slingshot`` event) are held for it again: out of the free set whatever the round
robin's cursor, never given to another job, freed by its release; restoring twice keeps
them; VNIs another job holds are refused, naming it."""

from __future__ import annotations

import pytest

from pipeline.errors import VniError
from pipeline.store.vnipool import VniPool


def test_restored_vnis_are_held_and_never_given_to_another_job(pool: VniPool) -> None:
    pool.configure("1024-1027")
    assert pool.restore(7, [1025, 1026]) == [1025, 1026]
    assert pool.restore(7, [1025, 1026]) == [1025, 1026]  # a copy: the same
    given = pool.reserve(8, 2)
    assert not set(given) & {1025, 1026}
    with pytest.raises(VniError, match="0 available"):  # the four are held
        pool.reserve(9, 1)
    pool.release(7)
    assert pool.reserve(9, 1)[0] in (1025, 1026)


def test_vnis_another_job_holds_are_refused_naming_it(pool: VniPool) -> None:
    pool.configure("1024-1027")
    held = pool.reserve(8, 1)
    with pytest.raises(VniError, match="are held by job"):
        pool.restore(7, held)
    assert len(pool.query()["jobs"]) == 1  # job 7 holds nothing
