"""The real-Flux tier: the flux-core (0.88 or newer), Fluxion and flux-coral2 plugins this
machine has installed, found by :func:`pipeline.clients.flux_site.find_flux`
(``FLUX_PREFIX``, else ``flux`` on ``PATH``; ``FLUX_CORAL2_PREFIX``). Without one, the tier
is not run, and the session says so at its start and in its summary
(``tests/flux_tier.py``); ``make test-flux`` fails instead. (``make record-flux``'s bare
instances are ``tests/flux/record.py``'s.)

The instance here is a whole system, one per test session (:func:`session_tier`): the
simulated system of the demo (Redis with a user per role and signing, the worker, beat, the watcher,
the API server with DWS, the node workers, the fabric manager giving hardware collectives
to jobs of two nodes or more) around a real Flux with Fluxion, ``dws-jobtap.so``,
``perilog.so`` running ``coral2-pipeline flux-prolog``, and ``coral2-pipeline flux-bridge``
beside it.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from coral2_sim.flux_real import RealFlux
from coral2_sim.flux_side import CLUSTER
from coral2_sim.system import SimulatedSystem

from pipeline.clients.flux_site import FluxNotFound, FluxSite, find_flux
from pipeline.model.jobid import decode_jobid
from pipeline.platform.sending import settings_of
from pipeline.platform.signing import secure
from pipeline.store import Store
from tests.flux.checks import TIER_MAPPING

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def flux_site() -> FluxSite:
    """The installed Flux (the tier is deselected where there is none)."""
    try:
        return find_flux()
    except FluxNotFound as exc:
        pytest.fail(f"real-Flux tier: not run: {exc}")


def until(condition: Callable[[], bool], timeout_s: float = 60) -> bool:
    """Wait until ``condition()`` holds; whether it did within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


TIER_CONFIG = Path(__file__).with_name("tier-cluster.toml")


@dataclass
class Tier:
    """The simulated world and the real Flux in it."""

    system: SimulatedSystem
    flux: RealFlux

    @property
    def store(self) -> Store:
        assert self.system.store is not None
        return self.system.store

    def submit(self, *args: str) -> int:
        """``flux submit ARGS``; the job's id."""
        return decode_jobid(self.flux.flux("submit", *args).strip())

    def wait_inactive(self, jobid: int, timeout_s: float = 120) -> None:
        """Wait until the job is INACTIVE (``flux job wait-event clean``)."""
        self.flux.flux(
            "job", "wait-event", "-t", str(timeout_s), str(jobid), "clean", timeout=timeout_s + 10
        )

    def events(self, jobid: int) -> list[dict[str, Any]]:
        """The job's eventlog."""
        out = self.flux.flux("job", "eventlog", "--format=json", str(jobid))
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def names(self, jobid: int) -> list[str]:
        """Event names, with the description of prolog and epilog events."""
        out = []
        for event in self.events(jobid):
            description = (event.get("context") or {}).get("description")
            out.append(f"{event['name']} {description}" if description else event["name"])
        return out

    def output(self, jobid: int) -> str:
        """What the job printed (``flux job attach``)."""
        return self.flux.run("job", "attach", str(jobid)).stdout

    def settled(self, timeout_s: float = 60) -> list[str]:
        """Wait until nothing is left (the node epilogs run after a job is INACTIVE);
        return what is still left at ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while (found := self.leaks()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return found

    def leaks(self) -> list[str]:
        """What the pipeline and Flux still hold (nothing, once every job is over)."""
        from coral2_sim.demo.metrics import leaks

        active = self.flux.flux("jobs", "--filter=pending,running", "-no", "{id.f58} {state}")
        found = [f"flux job {line}" for line in active.splitlines() if line.strip()]
        allocated = self.flux.flux("resource", "list", "-s", "allocated", "-no", "{nodelist}")
        found += [f"nodes still allocated: {n}" for n in allocated.split() if n.strip()]
        return found + leaks(self.system)


def start_tier(
    site: FluxSite, workdir: Path, system_env: dict[str, str] | None = None, **flux_options: Any
) -> Tier:
    """The simulated world (its pipeline processes given ``system_env`` too), then the real
    Flux in it (with ``flux_options``) and its bridge."""
    system = SimulatedSystem(
        TIER_MAPPING,
        observe_only=False,
        with_flux=False,
        node_workers=True,
        slingshot=True,
        signing=True,
        acl=True,
        config=str(TIER_CONFIG),
        latency_s=0.001,
        workdir=workdir,
        hwcoll_min_nodes=2,
        loglevel="INFO",  # each task in the worker's log, to tell what a failure did
        extra_env=dict(system_env or {}),
    ).start()
    env = dict(system.env(), **system.role_env("bridge"))
    if "site_prolog_d" in flux_options:  # ours runs on each node, as the node's user
        flux_options["node_env"] = system.role_env("node")
    flux = RealFlux(site, workdir, TIER_MAPPING, CLUSTER, env, **flux_options)
    try:
        flux.start()
        flux.start_bridge()
    except BaseException:
        flux.stop()
        system.stop()
        raise
    return Tier(system, flux)


def signing_as(tier: Tier) -> Tier:
    """``tier``, its app's signer registered again: kombu's serializer registry is one per
    process, as Celery has it, so a system started later in this process (a module's own
    tier) signs with its own key until this is called; ``tier``'s node workers would refuse
    those messages."""
    app = tier.system.app
    assert app is not None
    secure(app, settings_of(app).pipeline)
    return tier


@contextlib.contextmanager
def running_tier(
    site: FluxSite, workdir: Path, system_env: dict[str, str] | None = None, **flux_options: Any
) -> Iterator[Tier]:
    """:func:`start_tier`, stopped (Flux, then the simulated world) on leaving."""
    started = start_tier(site, workdir, system_env, **flux_options)
    try:
        yield started
    finally:
        started.flux.stop()
        started.system.stop()


@pytest.fixture(scope="session")
def session_tier(flux_site: FluxSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    with running_tier(flux_site, tmp_path_factory.mktemp("tier")) as started:
        yield started


@pytest.fixture
def tier(session_tier: Tier) -> Tier:
    """The whole system around a real Flux whose job-manager prolog is ours alone (one for
    the session)."""
    return signing_as(session_tier)
