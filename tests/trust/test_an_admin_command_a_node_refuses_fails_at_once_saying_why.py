"""``slingshot env`` and ``slingshot clean`` ask a node worker; run with settings that hold
no signing key (the monitoring host's), what they send is unsigned, and the node worker
sets it aside. The command then fails as soon as that refusal is a dead letter, saying
the node refused it and which settings to run it with — not after waiting its whole
``--timeout`` for an answer that never comes."""

from __future__ import annotations

import os
import subprocess
import sys

from coral2_sim.system import SimulatedSystem


def test_an_unsigned_request_is_refused_and_said_so(system: SimulatedSystem) -> None:
    assert system.flux is not None
    env = {k: v for k, v in system.env().items() if "SECURITY" not in k}
    env = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "slingshot", "clean", "compute01",
         "--timeout", "600"],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "the node worker of compute01 refused it" in done.stderr, done.stderr
    assert "management key" in done.stderr and "worker.toml" in done.stderr
