"""Per-node policy maximums are enforced in flux-coral2's order with its message."""

from __future__ import annotations

import pytest

from pipeline.errors import ResourceLimitExceeded, UnknownAllocationLabel
from pipeline.model.breakdown import ResourceLimits, apply_breakdowns
from tests.model.breakdown_data import lustre, node_job, xfs


def test_a_request_within_the_maximum_passes() -> None:
    assert apply_breakdowns([xfs(100)], node_job(2), limits=ResourceLimits(xfs=100)) is not None


def test_exceeding_the_xfs_maximum_is_refused_with_upstreams_text() -> None:
    with pytest.raises(ResourceLimitExceeded) as info:
        apply_breakdowns([xfs(60), xfs(50)], node_job(2), limits=ResourceLimits(xfs=100))
    assert (
        str(info.value)
        == "Requested a total of 110 GiB of xfs storage per node but max is 100 GiB per node"
    )


def test_lustre_is_judged_per_node_rounded_down() -> None:
    limits = ResourceLimits(lustre=2559)
    with pytest.raises(ResourceLimitExceeded, match="Requested a total of 2560 GiB of lustre"):
        apply_breakdowns([lustre(10 * 2**40)], node_job(4), limits=limits)
    assert apply_breakdowns([lustre(10 * 2**40)], node_job(4), limits=ResourceLimits(lustre=2560))


def test_xfs_is_checked_before_lustre() -> None:
    limits = ResourceLimits(xfs=1, lustre=1)
    with pytest.raises(ResourceLimitExceeded, match="of xfs storage"):
        apply_breakdowns([lustre(10 * 2**40), xfs(10)], node_job(4), limits=limits)


def test_one_limits_object_serves_many_jobs_without_accumulating() -> None:
    limits = ResourceLimits(xfs=100)
    for _ in range(5):
        apply_breakdowns([xfs(100)], node_job(1), limits=limits)


def test_metadata_targets_do_not_count() -> None:
    limits = ResourceLimits()
    limits.increment("mdt", 1000)
    limits.increment("mgt", 1000)
    limits.increment("mgtmdt", 1000)
    assert limits.totals == {"xfs": 0, "gfs2": 0, "raw": 0, "lustre": 0}


def test_an_unknown_label_cannot_be_counted() -> None:
    with pytest.raises(UnknownAllocationLabel, match="'bogus'"):
        ResourceLimits().increment("bogus", 1)
