"""Whole-workflow checks nnf makes in Proposal, and the persistent-creation restriction."""

from __future__ import annotations

import pytest

from pipeline.errors import PersistentCreationForbidden
from pipeline.model.directives import check_persistent_creation, check_workflow, parse_directives


def check(*lines: str) -> str | None:
    return check_workflow(parse_directives(list(lines)))


def test_a_normal_workflow_passes() -> None:
    assert (
        check(
            "#DW jobdw type=xfs capacity=1GiB name=ab",
            "#DW copy_in source=/lus/x destination=$DW_JOB_ab/",
        )
        is None
    )


def test_create_persistent_must_be_alone() -> None:
    message = check(
        "#DW create_persistent type=xfs name=pp capacity=1GiB",
        "#DW jobdw type=xfs capacity=1GiB name=ab",
    )
    assert message == (
        "DW Directive 0: User error: only a single create_persistent or destroy_persistent "
        "directive is allowed per workflow"
    )


def test_only_one_container_is_supported() -> None:
    message = check("#DW container name=c1 profile=pp", "#DW container name=c2 profile=pp")
    assert (
        message
        == "DW Directive 0: User error: only a single container directive is supported per workflow"
    )


def test_copies_must_name_an_existing_jobdw_with_underscores_read_as_dashes() -> None:
    assert (
        check(
            "#DW jobdw type=xfs capacity=1GiB name=my-fs",
            "#DW copy_in source=/x destination=$DW_JOB_my_fs",
        )
        is None
    )
    assert check("#DW copy_in source=/x destination=$DW_JOB_nope") == (
        "DW Directive 0: User error: job storage instance 'nope' not found"
    )


def test_copies_to_raw_storage_are_refused_on_directive_0_as_nnf_reports_them() -> None:
    message = check(
        "#DW jobdw type=raw capacity=1GiB name=blk",
        "#DW copy_out source=$DW_JOB_blk destination=/o",
    )
    # the copy is directive 1; nnf checks the whole workflow on the first entry it runs
    assert (
        message == "DW Directive 0: User error: data movement can not be used with raw allocations"
    )


def test_copies_of_persistent_storage_need_its_persistentdw() -> None:
    assert check("#DW copy_in source=/x destination=$DW_PERSISTENT_proj") == (
        "DW Directive 0: User error: persistentdw directive mentioning 'proj' not found"
    )


def test_only_the_owner_creates_persistent_storage_when_restricted() -> None:
    lines = ["#DW create_persistent type=lustre name=proj capacity=1TiB"]
    with pytest.raises(
        PersistentCreationForbidden,
        match="only the instance owner can create persistent file systems",
    ):
        check_persistent_creation(lines, userid=42, owner_uid=0, restrict=True)
    check_persistent_creation(lines, userid=0, owner_uid=0, restrict=True)
    check_persistent_creation(lines, userid=42, owner_uid=0, restrict=False)
