"""DWS checks a directive's arguments with Go's ``regexp``, whose ``\\d`` is ASCII alone: a
capacity written in fullwidth or Arabic-Indic digits, or superscripts, is refused with
the same words as any other bad capacity, never read as a number."""

from __future__ import annotations

import pytest

from pipeline.errors import DirectiveError
from pipeline.model.directives import parse_directives


@pytest.mark.parametrize("capacity", ["１０GiB", "٣GiB", "²GiB", "1０GiB"])
def test_the_capacity_is_refused(capacity: str) -> None:
    with pytest.raises(DirectiveError, match=f"argument 'capacity' invalid string '{capacity}'"):
        parse_directives([f"#DW jobdw type=xfs capacity={capacity} name=scratch"])


def test_ascii_digits_go_through() -> None:
    (directive,) = parse_directives(["#DW jobdw type=xfs capacity=10GiB name=scratch"])
    assert directive.args["capacity"] == "10GiB"
