"""Tell systemd how a service is doing (``sd_notify``): ready, stopping, and alive.

A unit of ``Type=notify`` waits for ``READY=1`` before it counts the service as
started; with ``WatchdogSec=`` it restarts a service that stops sending ``WATCHDOG=1``
for that long. systemd passes the socket in ``NOTIFY_SOCKET`` and the watchdog period
in ``WATCHDOG_USEC``; without them (a service run by hand, a test) every call here does
nothing. The protocol is one datagram per message on that socket (``sd_notify(3)``), so
no library is needed; a failed send is logged, never raised: a service must not die
because systemd went away.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable

log = logging.getLogger("coral2_pipeline.systemd")


def notify(*states: str) -> bool:
    """Send ``states`` (``"READY=1"``, ``"STATUS=…"``, ``"WATCHDOG=1"``, …) to systemd;
    return whether there was a socket to send to."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall("\n".join(states).encode())
    except OSError as exc:
        log.warning("cannot notify systemd (%s): %s", ", ".join(states), exc)
        return False
    return True


def watchdog_interval() -> float | None:
    """How often to send ``WATCHDOG=1`` (half the unit's ``WatchdogSec=``, as systemd
    advises), or None when the unit has no watchdog for this process."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return max(int(usec) / 2e6, 0.1)
    except ValueError:
        return None


class Watchdog:
    """Send ``WATCHDOG=1`` every half period while ``healthy()`` says the service works:
    a service stuck inside (a loop that no longer turns) stops the pings, and systemd
    restarts it. Without ``WATCHDOG_USEC`` it does nothing."""

    def __init__(self, healthy: Callable[[], bool], name: str = "watchdog") -> None:
        self.healthy = healthy
        self.interval = watchdog_interval()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Watchdog:
        if self.interval is not None:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        assert self.interval is not None
        while not self._stop.wait(self.interval):
            try:
                well = self.healthy()
            except Exception as exc:  # a check that fails is a service that is not well
                log.warning("watchdog check failed: %s", exc)
                well = False
            if well:
                notify("WATCHDOG=1")
            else:
                log.warning("not well: no watchdog ping (systemd restarts us if this lasts)")
