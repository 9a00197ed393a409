"""The worker's message consumer: a message Celery cannot use is set aside, not fatal.

Celery's consumer logs a message it cannot decode, that names no task this
worker runs, or that fails validation (a signature that does not verify,
content the worker does not accept), and drops it; anything else its task
strategy raises — a message with a task name but no id, say — escapes into
the worker's event loop and stops the worker. This consumer sets every such
message aside as a dead letter (:mod:`pipeline.platform.deadletters`), with
its headers and body, drops it from the queue, and goes on.

With signing on it also refuses, the same way and before the task is looked
up, a message that does not verify or decode as a signed JSON protocol-2
body, one whose signature was made for another task, or one signed by a key
whose role may not send it (:func:`pipeline.platform.signing.refusal`):
nothing of it runs. Each such dead letter names the signer the message
claimed.

``celery_config`` names it as ``worker_consumer``; node workers use it too.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer
from vine import promise  # type: ignore[import-untyped]

from pipeline.platform.broker import PREFIX_OPTION
from pipeline.platform.deadletters import set_aside
from pipeline.platform.signing import claimed_signer, refusal, signed

log = logging.getLogger("coral2_pipeline.consumer")


def _raw(message: Any) -> str:
    """The message as it came: its headers and its body."""
    body = message.body
    text = body.decode("utf-8", "backslashreplace") if isinstance(body, bytes) else str(body)
    try:
        headers = json.dumps(message.headers, default=repr)
    except (TypeError, ValueError):
        headers = repr(message.headers)
    return f"headers={headers} body={text}"


class Consumer(CeleryConsumer):  # type: ignore[misc]
    """Celery's consumer, setting aside what it cannot use (module docstring)."""

    def _set_aside(self, message: Any, reason: str) -> None:
        if signed(self.app):  # whom it claims to come from, trusted or not
            reason = f"{reason} [claimed signer: {claimed_signer(message.body)!r}]"
        info = getattr(message, "delivery_info", None) or {}
        where = str(info.get("routing_key") or info.get("exchange") or "?")
        prefix = self.app.conf.broker_transport_options.get(PREFIX_OPTION)
        with message.channel.conn_or_acquire() as client:
            set_aside(client, prefix, where, _raw(message), reason)

    def _drop(self, message: Any) -> None:
        message.ack_log_error(log, self.connection_errors)

    def on_decode_error(self, message: Any, exc: Exception) -> None:
        info = getattr(message, "delivery_info", None) or {}
        if info.get("exchange") == self.app.conf.control_exchange + ".pidbox":
            # a control command it may not obey (unsigned, as Flower's wake-up; or signed
            # by a node): refused and logged; no work is lost, so no dead letter
            log.warning(
                "refused a control command (%s, claimed signer %r): %s",
                message.content_type,
                claimed_signer(message.body) if signed(self.app) else None,
                exc,
            )
            self._drop(message)
            return
        self._set_aside(message, f"cannot decode it ({message.content_type}): {exc}")
        self._drop(message)

    def on_unknown_message(self, body: Any, message: Any) -> None:
        self._set_aside(message, "not a task message (no task name in its headers)")
        self._drop(message)

    def on_unknown_task(self, body: Any, message: Any, exc: Exception) -> None:
        name = (message.headers or {}).get("task") if isinstance(message.headers, dict) else None
        self._set_aside(message, f"no task named {name!r} runs here")
        self._drop(message)

    def on_invalid_task(self, body: Any, message: Any, exc: Exception) -> None:
        self._set_aside(message, f"refused: {type(exc).__name__}: {exc}")
        self._drop(message)

    def create_task_handler(self, promise: Any = promise) -> Any:
        handle = super().create_task_handler(promise)
        # kombu counts KeyError among the Redis transport's connection errors (a stale
        # poller fd); from a task strategy it means a message missing a field
        connection_errors = tuple(e for e in self.connection_errors if e is not KeyError)
        check = signed(self.app)

        def on_task_received(message: Any) -> Any:
            try:
                problem = refusal(message) if check else None
                if problem is not None:
                    self._set_aside(message, f"refused: {problem}")
                    self._drop(message)
                    return None
                return handle(message)
            except connection_errors:
                raise  # the broker is gone: Celery reconnects
            except Exception as exc:  # what Celery's strategy did not expect
                self._set_aside(message, f"cannot run it: {type(exc).__name__}: {exc}")
                self._drop(message)
                return None

        return on_task_received
