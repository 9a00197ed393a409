"""The changes an action makes to a job record (``UpdateJob``, ``MarkDone``) are a
``JobChanges``, which names every field of the record an action may set with the
record's own type: mypy then refuses a misspelled field or a value of the wrong type
where the action is made, instead of the change being dropped silently."""

from __future__ import annotations

from typing import get_type_hints

from pipeline.model.job import JobChanges, JobRecord

NOT_SET_BY_ACTIONS = {"jobid", "version"}  # the key, and the store's own counter


def test_every_field_of_the_record_but_its_key_is_a_change_of_the_same_type() -> None:
    changes = get_type_hints(JobChanges)
    fields = {name: info.annotation for name, info in JobRecord.model_fields.items()}
    assert set(changes) == set(fields) - NOT_SET_BY_ACTIONS
    for name, annotation in changes.items():
        assert annotation == fields[name], name


def test_every_change_is_optional() -> None:
    assert JobChanges.__required_keys__ == frozenset()
