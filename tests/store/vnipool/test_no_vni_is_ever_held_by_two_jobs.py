"""Concurrent reserves, releases and confirmations never give one VNI to two jobs."""

from __future__ import annotations

import threading
import uuid

import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import VniError
from pipeline.model.idset import decode_idset
from pipeline.store import Keys
from pipeline.store.vnipool import VniPool

RELEASE_TO = ["n1", "n2"]


def test_sixteen_threads_reserving_and_releasing_never_share_a_vni(pool: VniPool) -> None:
    pool.configure("1024-1100")
    held: dict[int, int] = {}  # vni → jobid, as the threads saw their reservations
    lock = threading.Lock()
    clashes: list[str] = []

    def work(worker: int) -> None:
        for n in range(40):
            jobid = worker * 1000 + n
            try:
                vnis = pool.reserve(jobid, 1 + n % 4)
            except VniError:
                continue
            with lock:
                for vni in vnis:
                    if vni in held:
                        clashes.append(f"{vni}: jobs {held[vni]} and {jobid}")
                    held[vni] = jobid
            with lock:
                for vni in vnis:
                    del held[vni]
            pool.release(jobid, RELEASE_TO if n % 3 == 0 else ())
            for node in RELEASE_TO:
                pool.confirm_destroyed(jobid, node)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert clashes == []
    assert pool.query()["free"] == "1024-1100"


operations = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "release", "quarantine", "confirm", "configure"]),
        st.integers(0, 5),
        st.integers(0, 4),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(ops=operations)
def test_free_reserved_and_quarantined_vnis_never_overlap(
    redis_url: str, ops: list[tuple[str, int, int]]
) -> None:
    client = redis.Redis.from_url(redis_url)
    pool = VniPool(client, Keys(f"prop-{uuid.uuid4().hex[:8]}"))
    pool.configure("1024-1031")
    for op, jobid, count in ops:
        try:
            if op == "reserve":
                pool.reserve(jobid, count)
            elif op == "release":
                pool.release(jobid)
            elif op == "quarantine":
                pool.release(jobid, ["n1"])
            elif op == "confirm":
                pool.confirm_destroyed(jobid, "n1")
            else:
                pool.configure("1024-1029" if count % 2 else "1024-1031")
        except VniError:
            pass
        state = pool.query()
        free = _ids(state["free"])
        reserved = [v for vnis in state["jobs"].values() for v in vnis]
        quarantined = [v for entry in state["quarantine"].values() for v in entry["vnis"]]
        taken = reserved + quarantined
        assert len(taken) == len(set(taken)), state
        assert not free & set(taken), state
    client.close()


def _ids(text: str) -> set[int]:
    return set(decode_idset(text))
