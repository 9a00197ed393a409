"""How many VNIs a job asks for at RUN, from its cray-slingshot shell option."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.errors import InputError
from pipeline.model.slingshot import VniRequest, reservation_event, vni_request


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (None, VniRequest(1)),
        ({}, VniRequest(1)),
        ({"vnicount": 3, "other": "ignored"}, VniRequest(3)),
        ({"vnicount": 0}, VniRequest(0, "none requested")),
        ("off", VniRequest(0, "disabled by user request")),
        ({"vnicount": 9}, VniRequest(9)),
    ],
)
def test_the_option_gives_the_count_or_the_reason(option: Any, expected: VniRequest) -> None:
    assert vni_request(option, vnis_per_job=1) == expected


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("foo", "Expected object, got string"),
        ({"vnicount": "bad"}, "Expected integer, got string"),
        ({"vnicount": 1.5}, "Expected integer, got real"),
    ],
)
def test_a_malformed_option_is_the_plugins_parse_error(option: Any, message: str) -> None:
    with pytest.raises(
        InputError, match=rf"^error parsing cray-slingshot shell options: {message}$"
    ):
        vni_request(option, vnis_per_job=1)


def test_the_event_names_the_vnis_or_why_there_are_none() -> None:
    assert reservation_event([1024, 1025]) == {"vnis": [1024, 1025]}
    assert reservation_event([], "none requested") == {"vnis": [], "empty-reason": "none requested"}
