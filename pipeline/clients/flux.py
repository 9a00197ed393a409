"""flux-python, the Python bindings of flux-core: the only module that imports ``flux``.

:class:`FluxHandle` is one handle on the Flux instance the bridge runs in:
RPCs, job KVS puts and job eventlogs (raising :class:`~pipeline.errors.FluxError` on an
error answer and :class:`~pipeline.errors.FluxUnreachable` when the broker
cannot be reached), and the reactor the bridge serves its requests and
timers on. flux-python is the optional ``flux`` extra; without it the
bridge stops with a :class:`~pipeline.errors.ConfigError` saying what to do.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

from pipeline.errors import ConfigError, FluxError, FluxUnreachable, InputError
from pipeline.model.eventlog import EventlogEntry, parse_eventlog

MISSING = (
    "needs flux-python, the Python bindings of flux-core, and could not import it "
    "({error}). Run the bridge on a Flux node where "
    "`python3 -c 'import flux'` works (flux-core's python3 bindings, or "
    "`pip install 'coral2-pipeline[flux]'` matching the installed flux-core), "
    "under the instance owner, e.g. from the system instance's rc1."
)
UNREACHABLE = {errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN, errno.EHOSTUNREACH, errno.ENODEV}

#: A request's callback: (topic, payload) → the answer to send back.
#: How a request is answered: once, now or later (the Flux message is kept alive by its
#: Python wrapper, which holds a reference on it, as flux-core's bindings have since 0.32).
Reply = Callable[[dict[str, Any]], None]
#: What answers a request: given its topic, payload and how to reply, it replies at once
#: or arranges to reply later (a reactor timer): it never blocks the reactor.
Responder = Callable[[str, Any, Reply], None]


def import_flux() -> Any:
    """Import ``flux``; raise ConfigError with what to do when it is missing."""
    try:
        import flux
        import flux.constants
        import flux.job
    except ImportError as exc:
        raise ConfigError(MISSING.format(error=exc)) from exc
    return flux


def _translated(exc: OSError) -> Exception:
    if exc.errno in UNREACHABLE:
        return FluxUnreachable(str(exc))
    return FluxError(exc.strerror or str(exc))


class FluxHandle:
    """One handle on the enclosing Flux instance (``flux.Flux()``)."""

    def __init__(self, flux: Any | None = None, handle: Any | None = None) -> None:
        self.flux = flux or import_flux()
        self.handle = handle or self.flux.Flux()
        self._watchers: list[Any] = []
        self._pending: set[Any] = set()  # one-shot timers not fired yet (:meth:`after`)

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        """Send one RPC and wait for its answer."""
        try:
            answer = self.handle.rpc(topic, payload, nodeid=nodeid).get()
        except OSError as exc:
            raise _translated(exc) from exc
        return answer if isinstance(answer, dict) else {}

    def attr(self, name: str) -> str | None:
        """Broker attribute ``name`` (``flux getattr``); None when the broker has none."""
        try:
            value = self.handle.attr_get(name)
        except OSError:
            return None
        return value if isinstance(value, str) else None

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        """Put ``key`` in the job's KVS directory and commit."""
        try:
            kvsdir = self.flux.job.job_kvs(self.handle, jobid)
            kvsdir[key] = value
            kvsdir.commit()
        except OSError as exc:
            raise _translated(exc) from exc

    def kvs_get(self, jobid: int, key: str) -> tuple[bool, Any]:
        """(whether the job's KVS directory holds ``key``, its value)."""
        try:
            kvsdir = self.flux.job.job_kvs(self.handle, jobid)
            return True, kvsdir[key]
        except KeyError:
            return False, None
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False, None
            raise _translated(exc) from exc

    def eventlog(self, jobid: int) -> list[EventlogEntry]:
        """The job's eventlog (``job-info.lookup``, as ``flux job eventlog`` reads it)."""
        try:
            answer = self.handle.rpc(
                "job-info.lookup", {"id": jobid, "keys": ["eventlog"], "flags": 0}
            ).get()
        except OSError as exc:
            raise _translated(exc) from exc
        try:
            return parse_eventlog(str(answer["eventlog"]))
        except (KeyError, TypeError, InputError) as exc:
            raise FluxError(f"job {jobid}: job-info.lookup answered no eventlog: {exc}") from exc

    def serve(self, service: str, methods: list[str], respond: Responder) -> None:
        """Register ``service`` and have ``respond(topic, payload, reply)`` answer each
        ``<service>.<method>`` request, through ``reply``, now or later."""

        def on_request(h: Any, _type: int, msg: Any, _arg: Any) -> None:
            def reply(answer: dict[str, Any]) -> None:
                h.respond(msg, answer)

            respond(msg.topic, msg.payload, reply)

        self.handle.service_register(service).get()
        request = self.flux.constants.FLUX_MSGTYPE_REQUEST
        for method in methods:
            self._watchers.append(
                self.handle.msg_watcher_create(on_request, request, f"{service}.{method}")
            )

    def journal(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Stream the job manager's events journal (``job-manager.events-journal``, active
        jobs first, then live events) into ``callback``, one response at a time."""

        def on_response(future: Any, _arg: Any = None) -> None:
            try:
                payload = future.get()
            except OSError as exc:  # the stream ended (job manager unloaded): stop serving
                raise _translated(exc) from exc
            if isinstance(payload, dict):
                callback(payload)
            future.reset()

        flags = self.flux.constants.FLUX_RPC_STREAMING
        self.handle.rpc("job-manager.events-journal", {"full": False}, flags=flags).then(
            on_response
        )

    def resource_journal(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Stream flux-core's resource journal (``resource.journal``, RFC 44: history, an
        empty sentinel, live events) into ``callback``, one response at a time."""

        def on_response(future: Any, _arg: Any = None) -> None:
            try:
                payload = future.get()
            except OSError as exc:  # the stream ended (resource module unloaded)
                raise _translated(exc) from exc
            if isinstance(payload, dict):
                callback(payload)
            future.reset()

        flags = self.flux.constants.FLUX_RPC_STREAMING
        self.handle.rpc("resource.journal", {}, nodeid=0, flags=flags).then(on_response)

    def every(self, period_s: float, callback: Callable[[], None]) -> None:
        """Call ``callback`` every ``period_s`` seconds while the reactor runs."""
        self._watchers.append(
            self.handle.timer_watcher_create(period_s, lambda *_: callback(), repeat=period_s)
        )

    def after(self, delay_s: float, callback: Callable[[], None]) -> None:
        """Call ``callback`` once, ``delay_s`` seconds from now, from the reactor (the
        watcher is kept until it fires)."""

        def fire(*_: Any) -> None:
            self._pending.discard(watcher)
            watcher.stop()
            callback()

        watcher = self.handle.timer_watcher_create(delay_s, fire, repeat=0.0)
        self._pending.add(watcher)
        watcher.start()

    def run(self) -> None:
        """Start the registered watchers and run the reactor until it stops."""
        for watcher in self._watchers:
            watcher.start()
        self.handle.reactor_run()
