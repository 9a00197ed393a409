"""The simulated system's child processes die with the process that started them.

``make demo``, the benchmarks and the tests start redis-server, the API
server, workers, beat and the watcher as child processes and stop them in
order on the way out (:meth:`SimulatedSystem.stop`, :meth:`RedisServer.stop`).
A parent that is SIGKILLed (or a CI step that times out) has no way out:
without more, its children would run on, holding ports and CPU. So each is
started under util-linux's ``setpriv --pdeathsig TERM``, which asks the
kernel to send it SIGTERM when its parent goes (Linux ``PR_SET_PDEATHSIG``;
it survives the ``exec`` of the real program).

The kernel sends it when the *thread* that started the child ends: children
are started from the main thread, which lives as long as the process.
"""

from __future__ import annotations

import shutil


def die_with_parent(argv: list[str]) -> list[str]:
    """``argv`` under ``setpriv --pdeathsig TERM`` where setpriv exists (util-linux, on
    every Linux distribution); elsewhere ``argv`` as it is — an orderly exit still
    stops every child, only a killed parent leaves them running."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else list(argv)
