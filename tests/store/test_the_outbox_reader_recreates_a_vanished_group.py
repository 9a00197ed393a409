"""The outbox reader creates its consumer group once, and again if the stream is deleted."""

from __future__ import annotations

from pipeline.store import OutboxMessage, Store


def _message(jobid: int) -> OutboxMessage:
    return OutboxMessage(kind="exception", jobid=jobid, payload={"type": "dws", "note": "x"})


def test_a_message_appended_after_the_stream_was_deleted_is_still_delivered(
    store: Store,
) -> None:
    store.outbox.append(_message(1))
    [first] = store.outbox.read("bridge")
    store.outbox.ack(first.entry_id)
    store.client.delete(store.keys.outbox)  # an admin's DEL, or a failover that lost it
    store.outbox.append(_message(2))
    [second] = store.outbox.read("bridge")
    assert second.message.jobid == 2
