"""The real-Flux tier: flux-core 0.88 built by ``make flux`` (``deploy/flux/build-flux.sh``,
cached outside the clone), one test instance per session.

The sources come from ``FLUX_SOURCES`` (``.ci/run`` points it at the tarballs CI lays
beside the clone), or that same copy when it is there, or else GitHub; with the cache warm
(keyed by the pinned checksums) none is read. A build that fails
fails the tier, naming its log: a machine that cannot build Flux does not pass it quietly.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOSTS = "compute[01-02]"


@pytest.fixture(scope="session")
def flux_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = dict(os.environ, FLUX_FLUXION=os.environ.get("FLUX_FLUXION", "0"))
    shared = ROOT.parent / "shared" / "flux"
    if "FLUX_SOURCES" not in env and (shared / "SHA256SUMS").exists():
        env["FLUX_SOURCES"] = str(shared)
    log = tmp_path_factory.mktemp("flux-build") / "build.log"
    with log.open("w") as out:
        done = subprocess.run(
            ["bash", str(ROOT / "deploy" / "flux" / "build-flux.sh")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=out,
            text=True,
            timeout=1800,
            check=False,
        )
    if done.returncode != 0:
        pytest.fail(f"make flux failed ({done.returncode}): {log.read_text()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def flux_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    config = tmp_path_factory.mktemp("flux-config")
    (config / "resource.toml").write_text(
        f'[resource]\nnoverify = true\n\n[[resource.config]]\nhosts = "{HOSTS}"\ncores = "0-3"\n'
    )
    yield config


def in_flux(prefix: Path, config: Path, script: Path, *args: str) -> str:
    """Run ``script`` with Debian's python3 inside a fresh two-broker test instance named
    ``compute[01-02]``; return what it printed."""
    env = dict(os.environ, PYTHONPATH=str(prefix / "lib" / "python3.11" / "site-packages"))
    argv = [str(prefix / "bin" / "flux"), "start", f"--config-path={config}", "--test-size=2"]
    argv += [f"--test-hosts={HOSTS}", "/usr/bin/python3", str(script), *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def answers(
    prefix: Path, config: Path, requests: list[tuple[str, dict[str, Any]]], tmp: Path
) -> Any:
    """What the real Flux answered to each request, in order."""
    path = tmp / "requests.json"
    path.write_text(json.dumps(requests))
    return json.loads(
        in_flux(prefix, config, Path(__file__).with_name("rpc_answers.py"), str(path))
    )
