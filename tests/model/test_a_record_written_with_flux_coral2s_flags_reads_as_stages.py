"""A job record an earlier release wrote with flux-coral2's boolean flags reads as stages."""

from __future__ import annotations

import json

import pytest

from pipeline.model.job import Epilog, JobRecord, Teardown


@pytest.mark.parametrize(
    ("flags", "teardown", "epilog"),
    [
        ({}, Teardown.NOT_ASKED, Epilog.HELD),
        ({"toredown": True}, Teardown.ASKED, Epilog.HELD),
        ({"toredown": True, "epilog_removed": True}, Teardown.ASKED, Epilog.RELEASED),
        (
            {"toredown": True, "deleted": True, "epilog_removed": True},
            Teardown.DELETED,
            Epilog.RELEASED,
        ),
        (
            {"toredown": False, "deleted": False, "epilog_removed": False},
            Teardown.NOT_ASKED,
            Epilog.HELD,
        ),
    ],
)
def test_the_flags_map_to_the_teardown_and_epilog_stages(
    flags: dict[str, bool], teardown: Teardown, epilog: Epilog
) -> None:
    record = JobRecord.model_validate_json(json.dumps({"jobid": 7, **flags}))
    assert (record.teardown, record.epilog) == (teardown, epilog)


def test_a_record_written_now_round_trips_without_the_flags() -> None:
    record = JobRecord(jobid=7, teardown=Teardown.ASKED, epilog=Epilog.ABANDONED)
    text = record.model_dump_json()
    assert "toredown" not in text and "epilog_removed" not in text
    assert JobRecord.model_validate_json(text) == record
