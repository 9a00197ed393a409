"""The demo's fabric-manager outage: it goes down in the middle of the batch and comes back.

Jobs that reach RUN while it is down run without hardware collectives (their
``hwcoll`` event says why); the releases of jobs that end meanwhile wait and
go through once it answers again. The leak check then finds no reservation
and no multicast tree left at the fabric manager.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from coral2_sim.system import SimulatedSystem

#: the outage starts once this many jobs hold a reservation, and lasts this long (s)
OUTAGE = (5, 1.0)


def start_outage(system: SimulatedSystem, timeout_s: float = 120.0) -> threading.Thread | None:
    """Take the fabric manager down for ``OUTAGE[1]`` s once ``OUTAGE[0]`` jobs hold a
    reservation (in the middle of the batch, whatever the machine's speed)."""
    fabric, flux = system.fabric, system.flux
    if fabric is None or flux is None:
        return None
    after, length = OUTAGE

    def outage() -> None:
        deadline = time.monotonic() + timeout_s
        while len(fabric.reservations()) < after and time.monotonic() < deadline:
            time.sleep(0.02)
        fabric.fault(down=True)
        time.sleep(length)
        fabric.fault(down=False)

    thread = threading.Thread(target=outage, name="fabric-outage", daemon=True)
    thread.start()
    return thread


def summary(system: SimulatedSystem, jobids: list[int]) -> list[str]:
    """One line on what hardware collectives did for the batch."""
    if system.fabric is None or system.flux is None:
        return []
    outcome: Counter[str] = Counter()
    with system.flux.lock:
        for jobid in jobids:
            for event in system.flux.jobs[jobid].events("hwcoll"):
                context = event.context or {}
                outcome["reserved" if context.get("jobID") else "without"] += 1
    return [
        f"{outcome['reserved']} jobs reserved multicast addresses, "
        f"{outcome['without']} ran without them during a {OUTAGE[1]:g} s fabric-manager "
        f"outage; their applications made {system.fabric.trees_made} multicast trees and "
        "left them; left at the fabric manager after cleanup: "
        f"{len(system.fabric.reservations())} reservations, {system.fabric.tree_count()} trees"
    ]
