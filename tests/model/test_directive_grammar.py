"""#DW lines are checked against the nnf ruleset with DWS's own messages."""

from __future__ import annotations

import pytest

from pipeline.errors import DirectiveError
from pipeline.model.directives import (
    Container,
    Copy,
    JobDW,
    PersistentDW,
    capacity_bytes,
    parse_directive,
    parse_directives,
)


def test_a_jobdw_line_parses_into_a_typed_directive() -> None:
    d = parse_directive("#DW jobdw type=xfs capacity=10GiB name=fast-scratch requires=copy-offload")
    assert isinstance(d, JobDW)
    assert (d.fs_type, d.capacity, d.name, d.requires) == (
        "xfs",
        10 * 2**30,
        "fast-scratch",
        ("copy-offload",),
    )


def test_every_command_of_the_ruleset_is_recognised() -> None:
    lines = [
        "#DW persistentdw name=shared-data",
        "#DW copy_in source=/lus/a destination=$DW_JOB_x/a",
        "#DW copy_out source=$DW_JOB_x/a destination=/lus/b profile=fast",
        "#DW container name=c1 profile=demo DW_JOB_foo_local=x",
        "#DW create_persistent type=lustre name=proj capacity=1TB",
        "#DW destroy_persistent name=proj",
    ]
    kinds = [type(parse_directive(line)) for line in lines]
    assert kinds[:4] == [PersistentDW, Copy, Copy, Container]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("jobdw type=xfs", "missing '#DW' prefix in directive 'jobdw type=xfs'"),
        ("#DW frob x=1", "invalid directive '#DW frob x=1'"),
        ("#DW", "invalid directive '#DW'"),
        ("#DW jobdw type=xfs capacity=10G name=ab", "argument 'capacity' invalid string '10G'"),
        ("#DW jobdw type=xfs capacity=10 name=ab", "argument 'capacity' invalid string '10'"),
        (
            "#DW jobdw type=xfs capacity=1.5TiB name=ab",
            "argument 'capacity' invalid string '1.5TiB'",
        ),
        ("#DW jobdw type=xfs capacity=10gib name=ab", "argument 'capacity' invalid string '10gib'"),
        ("#DW jobdw type=ext4 capacity=1GiB name=ab", "argument 'type' invalid string 'ext4'"),
        ("#DW jobdw type=xfs capacity=1GiB name=Ab", "argument 'name' invalid string 'Ab'"),
        ("#DW jobdw type=xfs capacity=1GiB name=a", "argument 'name' invalid string 'a'"),
        ("#DW jobdw type=xfs capacity=1GiB name=a_b", "argument 'name' invalid string 'a_b'"),
        ("#DW jobdw type=xfs name=ab", "missing required argument '^capacity$'"),
        ("#DW jobdw type=xfs capacity=1GiB name=ab color=red", "unsupported argument 'color'"),
        (
            "#DW jobdw type=xfs type=xfs capacity=1GiB name=ab",
            "repeated argument 'type' in directive",
        ),
        ("#DW jobdw type capacity=1GiB name=ab", "argument 'type' requires value"),
        (
            "#DW jobdw type=xfs capacity=1GiB name=ab requires=gpu",
            "argument 'requires' invalid string 'gpu' in list 'gpu'",
        ),
        (
            "#DW jobdw type=xfs capacity=1GiB name=ab requires=copy-offload,copy-offload",
            "argument 'requires' word 'copy-offload' repeated in list 'copy-offload,copy-offload'",
        ),
        ("#DW copy_in source=/a", "missing required argument '^destination$'"),
        ("#DW container name=cc", "missing required argument '^profile$'"),
    ],
)
def test_bad_lines_get_dws_messages(line: str, message: str) -> None:
    with pytest.raises(DirectiveError) as info:
        parse_directive(line)
    assert message in str(info.value)


def test_jobdw_names_must_be_unique_within_the_workflow() -> None:
    lines = [
        "#DW jobdw type=xfs capacity=1GiB name=ab",
        "#DW jobdw type=gfs2 capacity=1GiB name=ab",
    ]
    with pytest.raises(DirectiveError, match="value 'ab' must be unique within 'jobdw_name'"):
        parse_directives(lines)


def test_persistentdw_names_may_repeat() -> None:
    assert len(parse_directives(["#DW persistentdw name=ab", "#DW persistentdw name=ab"])) == 2


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1KB", 1000),
        ("1KiB", 1024),
        ("3MB", 3 * 10**6),
        ("2GiB", 2 * 2**30),
        ("1TB", 10**12),
        ("1TiB", 2**40),
    ],
)
def test_capacity_units_are_powers_of_ten_or_two(text: str, size: int) -> None:
    assert capacity_bytes(text) == size
