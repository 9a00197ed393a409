"""RFC 22 idsets decode and encode in Flux's exact string form."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import IdsetError
from pipeline.model.idset import decode_idset, encode_idset


def test_ranges_and_singletons_decode_in_ascending_order() -> None:
    assert decode_idset("0-3,7") == (0, 1, 2, 3, 7)


def test_empty_string_is_the_empty_set() -> None:
    assert decode_idset("") == ()
    assert encode_idset([]) == ""


def test_flux_brackets_are_accepted() -> None:
    assert decode_idset("[2-4]") == (2, 3, 4)


def test_encoding_folds_runs_whatever_the_input_order() -> None:
    assert encode_idset([7, 3, 2, 1, 0, 3]) == "0-3,7"


@pytest.mark.parametrize("bad", ["a", "1-", "01", "3-1", "1,,2", " 1", "1-2-3", "-1"])
def test_malformed_idsets_are_rejected_naming_the_text(bad: str) -> None:
    with pytest.raises(IdsetError, match=repr(bad).replace("[", r"\[")):
        decode_idset(bad)


def test_negative_ids_cannot_be_encoded() -> None:
    with pytest.raises(IdsetError, match="-1"):
        encode_idset([1, -1])


@given(st.sets(st.integers(min_value=0, max_value=5000), max_size=200))
def test_decode_of_encode_is_identity(ids: set[int]) -> None:
    assert decode_idset(encode_idset(ids)) == tuple(sorted(ids))


@given(st.sets(st.integers(min_value=0, max_value=5000), max_size=200))
def test_encode_of_decode_is_identity_on_canonical_strings(ids: set[int]) -> None:
    text = encode_idset(ids)
    assert encode_idset(decode_idset(text)) == text
