"""``make record-flux``: ask the Flux this machine has installed each conformance check's
requests, and write what it answered to ``tests/flux/recorded/<check>.json``.

The ordinary suite replays every recording against the simulated job manager
(``tests/sim/flux/test_the_simulated_flux_answers_as_the_recorded_real_one.py``), so the
simulator cannot drift from the real Flux on a machine that has none; a changed answer
after an upgrade shows in review as a diff of these files. Each file names the flux-core,
Fluxion and flux-coral2 releases it was recorded from and the date.

Run as ``python -m tests.flux.record [CHECK ...]`` (all checks without arguments). A
flux-coral2 installed by hand has no version the pipeline can read
(:mod:`pipeline.clients.flux_site`): say it with ``FLUX_CORAL2_VERSION``.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coral2_sim.flux_real import RealFlux
from coral2_sim.flux_side import CLUSTER

from pipeline.clients.flux_site import UNKNOWN, FluxNotFound, FluxSite, find_flux
from tests.flux.checks import (
    BRIDGE_REQUESTS,
    DRAIN_REQUESTS,
    HOSTS,
    JOBTAP_CASES,
    JOURNAL_MAX,
    JOURNAL_REQUESTS,
    PERILOG_CASES,
    TIER_MAPPING,
)

HERE = Path(__file__).parent
RECORDED = HERE / "recorded"


def bare_config(directory: Path, extra: str = "") -> Path:
    """A two-broker instance's configuration: ``compute[01-02]``, four cores each."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "resource.toml").write_text(
        f'[resource]\nnoverify = true\n\n[[resource.config]]\nhosts = "{HOSTS}"\ncores = "0-3"\n'
    )
    if extra:
        (directory / "site.toml").write_text(extra)
    return directory


def in_flux(site: FluxSite, config: Path, script: str, *args: str) -> Any:
    """Run ``script`` (a file beside this one) with this Python inside a fresh two-broker
    test instance named ``compute[01-02]``; return the JSON it printed."""
    env = dict(os.environ, PYTHONPATH=str(site.pythonpath))
    argv = [str(site.flux), "start", f"--config-path={config}", "--test-size=2"]
    argv += [f"--test-hosts={HOSTS}", sys.executable, str(HERE / script), *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"record-flux: {script} failed in Flux:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def _write_json(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def bridge_requests(site: FluxSite, tmp: Path) -> dict[str, Any]:
    real = RealFlux(site, tmp / "instance", TIER_MAPPING, CLUSTER, dict(os.environ)).start()
    try:
        path = _write_json(tmp / "requests.json", BRIDGE_REQUESTS)
        answers = json.loads(real.flux("python", str(HERE / "rpc_answers.py"), path))
    finally:
        real.stop()
    return {
        "what": "every request the bridge sends, for a job Flux does not know, for a job "
        "held in SCHED ($JOB), and Fluxion's status and property requests for vertices that "
        "exist and that do not",
        "instance": "four brokers compute[01-04] behind two rabbits, R the JGF of dws2jgf, "
        "Fluxion with match-format rv1, dws-jobtap.so and perilog.so loaded",
        "exchanges": [
            {"topic": topic, "payload": payload, "answer": answer}
            for (topic, payload), answer in zip(BRIDGE_REQUESTS, answers, strict=True)
        ],
    }


def drains(site: FluxSite, tmp: Path) -> dict[str, Any]:
    path = _write_json(tmp / "requests.json", DRAIN_REQUESTS)
    answers = in_flux(site, bare_config(tmp / "config"), "rpc_answers.py", path)
    return {
        "what": "resource.drain and resource.undrain: the modes, successes and error texts, "
        "what the bridge sends among them",
        "instance": f"two brokers {HOSTS}, sched-simple or Fluxion as installed",
        "exchanges": [
            {"topic": topic, "payload": payload, "answer": answer}
            for (topic, payload), answer in zip(DRAIN_REQUESTS, answers, strict=True)
        ],
    }


def resource_journal(site: FluxSite, tmp: Path) -> dict[str, Any]:
    config = bare_config(tmp / "config")
    text = (config / "resource.toml").read_text()
    (config / "resource.toml").write_text(
        text.replace("noverify = true", f"noverify = true\njournal-max = {JOURNAL_MAX}")
    )
    path = _write_json(tmp / "requests.json", JOURNAL_REQUESTS)
    return {
        "what": f"resource.journal streamed after six drains and undrains with journal-max = "
        f"{JOURNAL_MAX}: a truncate event, then the newest",
        "instance": f"two brokers {HOSTS}, [resource] journal-max = {JOURNAL_MAX}",
        "journal_max": JOURNAL_MAX,
        "requests": JOURNAL_REQUESTS,
        "responses": in_flux(site, config, "resource_journal.py", path),
    }


def dws_jobtap(site: FluxSite, tmp: Path) -> dict[str, Any]:
    extra = f'[job-manager]\nplugins = [ {{ load = "{site.dws_jobtap}" }} ]\n'
    path = _write_json(tmp / "cases.json", JOBTAP_CASES)
    answers = in_flux(site, bare_config(tmp / "config", extra), "jobtap_answers.py", path)
    return {
        "what": "dws-jobtap.so with no dws service and with one that answers each dws.* "
        "request as the case says: the requests it sends, the job's exceptions (their "
        "words) and its eventlog",
        "instance": f"two brokers {HOSTS}, dws-jobtap.so loaded, no perilog",
        "cases": [
            {"script": case, **answer} for case, answer in zip(JOBTAP_CASES, answers, strict=True)
        ],
    }


def perilog(site: FluxSite, tmp: Path) -> dict[str, Any]:
    code = tmp / "code"
    prolog = tmp / "prolog"
    prolog.write_text(
        f'#!/bin/sh\ncode=$(cat {code})\n[ "$code" = hang ] && exec sleep 300\nexit "$code"\n'
    )
    prolog.chmod(0o755)
    extra = f'[job-manager]\nplugins = [ {{ load = "{site.perilog}" }} ]\n\n'
    extra += f'[job-manager.prolog]\ncommand = ["{prolog}"]\n'
    path = _write_json(tmp / "cases.json", PERILOG_CASES)
    answers = in_flux(
        site, bare_config(tmp / "config", extra), "perilog_answers.py", path, str(code)
    )
    return {
        "what": "perilog.so's job-manager prolog on rank 0 (the conf.d file we ship): a "
        "prolog that exits 0, one that fails, one killed by a signal, and a job cancelled "
        "while its prolog runs",
        "instance": f"two brokers {HOSTS}, perilog.so with [job-manager.prolog] command",
        "cases": [
            {"script": case, **answer} for case, answer in zip(PERILOG_CASES, answers, strict=True)
        ],
    }


CHECKS: dict[str, Callable[[FluxSite, Path], dict[str, Any]]] = {
    "bridge-requests": bridge_requests,
    "drains": drains,
    "resource-journal": resource_journal,
    "dws-jobtap": dws_jobtap,
    "perilog": perilog,
}


def versions(site: FluxSite) -> dict[str, str]:
    """The releases a recording names: each must be known."""
    for key, version in site.versions.items():
        if version == UNKNOWN:
            raise SystemExit(
                f"record-flux: the {key} release at {site.prefix} is not known to its "
                "package manager; say it with FLUX_CORAL2_VERSION or FLUXION_VERSION"
            )
    return dict(site.versions)


def main(argv: list[str]) -> int:
    try:
        site = find_flux()
    except FluxNotFound as exc:
        print(f"record-flux: {exc}", file=sys.stderr)
        return 3
    names = argv or list(CHECKS)
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        print(f"record-flux: no check {unknown}; the checks: {list(CHECKS)}", file=sys.stderr)
        return 2
    stamp = {
        "versions": versions(site),
        "recorded": datetime.date.today().isoformat(),
    }
    RECORDED.mkdir(exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"record-{name}-") as tmp:
            body = CHECKS[name](site, Path(tmp))
        path = RECORDED / f"{name}.json"
        path.write_text(json.dumps({"check": name, **stamp, **body}, indent=1) + "\n")
        print(f"record-flux: {path.relative_to(HERE.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
