"""#DW expansion with presets matches flux-coral2 (t0003 vectors)."""

from __future__ import annotations

import pytest

from pipeline.errors import DirectiveError
from pipeline.model.directives import expand_directives

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
