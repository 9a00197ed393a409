"""#DW expansion with presets matches flux-coral2 (t0003 vectors)."""

from __future__ import annotations

import pytest

from pipeline.errors import DirectiveError
from pipeline.model.dw_expansion import expand_directives

PRESETS: dict[str, str | list[str]] = {
    "foo": "#DW foo",
    "bar": "#DW foo #DW bar",
    "baz": ["#DW foo", "#DW baz"],
}


@pytest.mark.parametrize(
    ("dw", "expected"),
    [
        ("#DW foo", ["#DW foo"]),
        ("#DW foo #DW bar", ["#DW foo", "#DW bar"]),
        (["#DW foo", "#DW bar"], ["#DW foo", "#DW bar"]),
        (["#DW foo", "#DW bar #DW baz"], ["#DW foo", "#DW bar", "#DW baz"]),
        ("foo_test", ["#DW foo_test"]),
    ],
)
def test_strings_and_lists_split_on_the_dw_marker(dw: str | list[str], expected: list[str]) -> None:
    assert expand_directives(dw, {}) == expected


@pytest.mark.parametrize(
    ("dw", "expected"),
    [
        ("foo", ["#DW foo"]),
        ("bar", ["#DW foo", "#DW bar"]),
        ("baz", ["#DW foo", "#DW baz"]),
        (["foo", "bar"], ["#DW foo", "#DW foo", "#DW bar"]),
        ("  foo  ", ["#DW foo"]),
    ],
)
def test_presets_are_substituted(dw: str | list[str], expected: list[str]) -> None:
    assert expand_directives(dw, PRESETS) == expected


def test_a_list_preset_is_taken_as_is_without_splitting() -> None:
    assert expand_directives("p", {"p": ["#DW a #DW b"]}) == ["#DW a #DW b"]


@pytest.mark.parametrize("dw", [5, {"a": 1}, None, ["#DW a", 3]])
def test_other_json_is_malformed(dw: object) -> None:
    with pytest.raises(DirectiveError, match="Malformed #DW directives, not list or string"):
        expand_directives(dw, {})


def test_more_directives_than_the_limit_are_refused_before_parsing() -> None:
    dw = "#DW jobdw type=xfs capacity=1GiB name=a " * 65
    with pytest.raises(DirectiveError, match=r"more than 64 \(pipeline.limits.max_directives\)"):
        expand_directives(dw, {})
    assert len(expand_directives(dw, {}, max_count=100)) == 65


def test_more_bytes_of_directives_than_the_limit_are_refused() -> None:
    dw = ["#DW jobdw type=xfs capacity=1GiB name=" + "a" * 2000] * 40
    with pytest.raises(DirectiveError, match=r"at most 65,536 \(pipeline.limits.max_dw_bytes\)"):
        expand_directives(dw, {})
