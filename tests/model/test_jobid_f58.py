"""Flux jobids encode to F58 and back; bad ids are named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import InputError
from pipeline.model.jobid import decode_jobid, encode_f58


def test_small_ids_use_the_f58_alphabet() -> None:
    assert encode_f58(0) == "ƒ1"
    assert encode_f58(57) == "ƒz"
    assert encode_f58(58) == "ƒ21"
    assert encode_f58(58, plain=True) == "f21"


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_decoding_the_encoding_gives_the_id_back(jobid: int) -> None:
    assert decode_jobid(encode_f58(jobid)) == jobid
    assert decode_jobid(encode_f58(jobid, plain=True)) == jobid
    assert decode_jobid(str(jobid)) == jobid


@pytest.mark.parametrize("bad", ["", "f0", "fO", "ƒ", "12x", "-1"])
def test_bad_jobids_are_refused(bad: str) -> None:
    with pytest.raises(InputError):
        decode_jobid(bad)


def test_ids_beyond_64_bits_cannot_be_encoded() -> None:
    with pytest.raises(InputError, match="64-bit"):
        encode_f58(2**64)
