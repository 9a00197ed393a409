"""RFC 29 hostlists keep order and repeats; NodeSet is used only where a set is meant."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import HostlistError
from pipeline.model.hostlist import (
    encode_hostlist,
    expand_hostlist,
    hostset,
    unique_hostlist,
)


def test_a_bracketed_range_expands_with_its_zero_padding() -> None:
    assert expand_hostlist("compute-[01-04]") == [
        "compute-01",
        "compute-02",
        "compute-03",
        "compute-04",
    ]


def test_expansion_keeps_the_written_order_and_repeats() -> None:
    assert expand_hostlist("b1,a1,b[3,2],a1") == ["b1", "a1", "b3", "b2", "a1"]


def test_a_list_of_hostlists_concatenates_like_r_nodelist() -> None:
    assert expand_hostlist(["n[1-2]", "m0"]) == ["n1", "n2", "m0"]


def test_encoding_folds_adjacent_runs_without_reordering() -> None:
    assert encode_hostlist(["c1", "c2", "c3", "c7"]) == "c[1-3,7]"
    assert encode_hostlist(["b1", "a1"]) == "b1,a1"
    assert encode_hostlist(["c3", "c1"]) == "c[3,1]"


def test_encoding_keeps_zero_padding_distinct() -> None:
    assert encode_hostlist(["n01", "n02", "n3"]) == "n[01-02,3]"
    assert expand_hostlist("n[01-02,3]") == ["n01", "n02", "n3"]


def test_the_set_form_sorts_and_deduplicates() -> None:
    assert unique_hostlist(["b1", "a1", "b2", "a1"]) == "a1,b[1-2]"
    assert "b2" in hostset("b[1-3]")


@pytest.mark.parametrize("bad", ["n[1-", "n1]", "n[a-b]", "n[3-1]", "a,,b", "n[[1]]"])
def test_malformed_hostlists_are_rejected_naming_the_text(bad: str) -> None:
    with pytest.raises(HostlistError) as info:
        expand_hostlist(bad)
    assert repr(bad) in str(info.value)


def test_hostnames_with_separators_cannot_be_encoded() -> None:
    with pytest.raises(HostlistError, match="a,b"):
        encode_hostlist(["a,b"])


hostnames = st.builds(
    lambda prefix, number, width: prefix + (str(number).zfill(width) if number is not None else ""),
    st.sampled_from(["n", "node-", "c", "rzadams", "x1y"]),
    st.one_of(st.none(), st.integers(min_value=0, max_value=120)),
    st.integers(min_value=1, max_value=3),
)


@given(st.lists(hostnames, max_size=40))
def test_expand_of_encode_is_identity_on_ordered_lists(hosts: list[str]) -> None:
    assert expand_hostlist(encode_hostlist(hosts)) == hosts


@given(st.lists(hostnames, max_size=40))
def test_the_set_form_expands_to_the_sorted_unique_hosts(hosts: list[str]) -> None:
    folded = unique_hostlist(hosts)
    assert set(expand_hostlist(folded)) == set(hosts)
    assert len(expand_hostlist(folded)) == len(set(hosts))
