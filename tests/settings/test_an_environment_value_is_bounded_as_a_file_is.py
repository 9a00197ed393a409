"""A setting given in the environment passes through the bounds a settings file does: a
value 100,000 brackets deep, or longer than 64 KiB, or nesting past the depth limit, is
one configuration error naming the variable, never a RecursionError."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError
from pipeline.settings import load_settings

VAR = "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 100_000, "is longer than 65,536 bytes"),
        ("[" * 2_000, "nests too deeply"),
        ("[" * 70 + "]" * 70, "nests more than 64 levels deep"),
    ],
    ids=["100000-brackets", "2000-brackets", "70-deep"],
)
def test_the_value_is_one_error_naming_the_variable(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"environment variable {VAR} {why}"):
        load_settings(env={VAR: text})


def test_a_plain_value_goes_through() -> None:
    assert load_settings(env={VAR: "site1"}).pipeline.key_prefix == "site1"
