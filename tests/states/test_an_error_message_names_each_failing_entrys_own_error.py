"""A Workflow error whose message nnf left without the user's words (``...: Internal
error:``) is completed with the errors of its drivers' entries that are in Error or in
TransientCondition and carry one, in order, joined by ``; ``; an entry in another status,
or with no error of its own, adds nothing, and a message with its own words is left as
it is."""

from __future__ import annotations

from pipeline.states.errors import message_of

BARE = "DW Directive 0: Internal error: "


def entry(status: str, error: str | None) -> dict[str, object]:
    return {"status": status, **({"error": error} if error is not None else {})}


def test_error_and_transient_entries_complete_a_bare_message_in_order() -> None:
    drivers = [entry("Error", "mkfs failed"), entry("TransientCondition", "no MGT yet")]
    status = {"message": BARE, "drivers": drivers}
    assert message_of(status) == "DW Directive 0: Internal error: (mkfs failed; no MGT yet)"


def test_entries_in_another_status_or_without_an_error_add_nothing() -> None:
    drivers = [entry("Completed", "stale words"), entry("Error", None), entry("Error", "")]
    assert message_of({"message": BARE, "drivers": drivers}) == BARE


def test_a_message_with_its_own_words_is_kept_and_none_is_empty() -> None:
    drivers = [entry("Error", "mkfs failed")]
    assert message_of({"message": "DW Directive 0: bad", "drivers": drivers}) == (
        "DW Directive 0: bad"
    )
    assert message_of({"drivers": drivers}) == ""
