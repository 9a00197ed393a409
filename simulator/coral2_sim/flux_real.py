"""A real Flux instance for the demo and the tests: the flux-core, Fluxion and
flux-coral2's ``dws-jobtap.so`` this machine has installed (:mod:`pipeline.clients.flux_site`),
started as a test instance whose brokers are named after the computes of a rabbit mapping.

The instance is configured the way a site configures its system instance:

* ``resource.toml``: R with the JGF ``coral2-pipeline dws2jgf`` writes (chassis, ssds and
  computes, so Fluxion schedules rabbits and ssds as a site's does); ``noverify``, since all
  brokers run on this one machine;
* ``sched-fluxion.toml``: ``match-format = "rv1"``, as flux-coral2 asks;
* ``site.toml``: the site's own ``[job-manager] plugins`` (``dws-jobtap.so``,
  ``perilog.so``), a default time limit for jobs (Fluxion refuses, as unsatisfiable, a
  job that must wait behind jobs without one), and, with :attr:`RealFlux.site_prolog_d`,
  the site's own per-rank prolog, which runs every script of that directory, ours
  (``deploy/flux/prolog.d``) among them;
* else ``coral2-pipeline.toml``: the file we ship (``deploy/flux/conf.d``).

What we ship is used with its installation prefix and settings file replaced by this
run's.

``coral2-pipeline flux-bridge`` runs beside it as a process of its own, reaching the
instance through ``FLUX_URI`` as a site's runs under the instance owner; it can be killed
and started again. The instance's initial program only waits, so the instance lives until
:meth:`RealFlux.stop`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coral2_sim.children import die_with_parent
from pipeline.clients.flux_site import FluxSite, fluxion_version_from_dmesg
from pipeline.errors import ConfigError
from pipeline.model.hostlist import encode_hostlist
from pipeline.model.jgf import dws2jgf
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.resource_set import r_from_config

ROOT = Path(__file__).resolve().parents[2]
#: The Flux side we ship, and the prefix its commands are written for.
SHIPPED = ROOT / "deploy" / "flux" / "conf.d" / "coral2-pipeline.toml"
SHIPPED_PREFIX = "/opt/coral2-pipeline"
SHIPPED_SETTINGS = "/etc/coral2-pipeline/flux.toml"
SHIPPED_PROLOG_D = ROOT / "deploy" / "flux" / "prolog.d" / "coral2-pipeline"
SHIPPED_NODE_SETTINGS = "/etc/coral2-pipeline/node.toml"
#: Cores per simulated compute (few: Fluxion's graph stays small).
CORES = "0-3"


@dataclass
class RealFlux:
    """One running test instance of the real Flux (see the module docstring)."""

    site: FluxSite
    workdir: Path
    mapping: RabbitMapping
    cluster: str
    #: the environment of the instance (its prolog runs in it) and of the bridge
    env: dict[str, str]
    chunks_per_nnf: int = 4
    #: the prolog.d of the site's own per-rank prolog, where ours goes (None: the site
    #: has no job-manager prolog, and ours is the conf.d file)
    site_prolog_d: Path | None = None
    #: the settings that log the per-rank prolog in to Redis as the node's user
    node_env: dict[str, str] = field(default_factory=dict)
    prolog_timeout: str = "5m"
    #: where the instance keeps its content across a restart (None: nothing is kept)
    statedir: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    bridge: subprocess.Popen[bytes] | None = None
    uri: str = ""
    started_s: float = 0.0
    _bridge_argv: list[str] = field(default_factory=list)

    @property
    def prefix(self) -> Path:
        """The installation prefix of flux-core."""
        return self.site.prefix

    @property
    def computes(self) -> list[str]:
        """The brokers' hostnames, rank order."""
        return list(self.mapping.computes)

    def config_dir(self) -> Path:
        """Write the instance's configuration (module docstring); return its directory."""
        conf = self.workdir / "flux-conf.d"
        conf.mkdir(parents=True, exist_ok=True)
        hosts = encode_hostlist(self.computes)
        raw_r = r_from_config([{"hosts": hosts, "cores": CORES}])
        jgf = dws2jgf(
            raw_r, self.mapping, chunks_per_nnf=self.chunks_per_nnf, cluster_name=self.cluster
        )
        (self.workdir / "R.json").write_text(json.dumps(jgf))
        (conf / "resource.toml").write_text(
            f'[resource]\npath = "{self.workdir / "R.json"}"\nnoverify = true\n'
        )
        (conf / "sched-fluxion.toml").write_text('[sched-fluxion-resource]\nmatch-format = "rv1"\n')
        site = "[job-manager]\nplugins = [\n"
        site += f'  {{ load = "{self.site.dws_jobtap}" }},\n'
        site += f'  {{ load = "{self.site.perilog}" }},\n]\n'
        # a site gives jobs a time limit: Fluxion calls a job that must wait for one
        # without a limit "unsatisfiable" (it can never reserve a start after it)
        site += '\n[policy.jobspec.defaults.system]\nduration = "1h"\n'
        if self.site_prolog_d is None:
            (conf / "coral2-pipeline.toml").write_text(self._shipped(SHIPPED, SHIPPED_SETTINGS))
        else:
            # the site's per-rank prolog runs every script of its prolog.d on each node of
            # the job (as `flux-imp run prolog` does), ours among them
            runner = self.workdir / "site-prolog"
            runner.write_text(
                f'#!/bin/sh\nfor script in {self.site_prolog_d}/*; do "$script" || exit 1; done\n'
            )
            runner.chmod(0o755)
            site += "\n[job-manager.prolog]\nper-rank = true\n"
            site += f'command = ["{runner}"]\ntimeout = "{self.prolog_timeout}"\n'
            ours = self.site_prolog_d / "coral2-pipeline"
            ours.write_text(self._shipped(SHIPPED_PROLOG_D, SHIPPED_NODE_SETTINGS))
            ours.chmod(0o755)
        (conf / "site.toml").write_text(site)
        return conf

    def _shipped(self, path: Path, settings: str) -> str:
        """A file we ship, with this run's installation prefix and settings file."""
        text = path.read_text()
        text = text.replace(f"{SHIPPED_PREFIX}/bin/", f"{Path(sys.executable).parent}/")
        if "CORAL2_PIPELINE_CONFIG" in self.env:
            text = text.replace(settings, self.env["CORAL2_PIPELINE_CONFIG"])
        if self.node_env and path == SHIPPED_PROLOG_D:  # the node's own Redis user
            logins = " ".join(f"{k}={v}" for k, v in sorted(self.node_env.items()))
            text = text.replace("exec ", f"exec env {logins} ", 1)
        return text.replace('timeout = "35m"', f'timeout = "{self.prolog_timeout}"')

    def instance_env(self) -> dict[str, str]:
        """The environment of the brokers (and so of the prolog) and the bridge."""
        env = dict(self.env)
        env["PYTHONPATH"] = str(self.site.pythonpath)
        if self.site.module_path_prepend:
            env["FLUX_MODULE_PATH_PREPEND"] = self.site.module_path_prepend
        env["PATH"] = f"{self.prefix / 'bin'}:{Path(sys.executable).parent}:{env['PATH']}"
        if self.statedir is not None:
            # rc1's cleanup would cancel the running jobs at shutdown: a restart keeps them
            env["FLUX_DISABLE_JOB_CLEANUP"] = "t"
        return env

    def start(self, timeout_s: float = 180) -> RealFlux:
        """Start the instance; wait until it answers; return self."""
        conf = self.config_dir()
        urifile = self.workdir / "flux-uri"
        urifile.unlink(missing_ok=True)
        argv = [str(self.prefix / "bin" / "flux"), "start", f"--config-path={conf}"]
        argv += [f"--test-size={len(self.computes)}"]
        argv += [f"--test-hosts={encode_hostlist(self.computes)}"]
        argv += ["-Slog-stderr-level=4"]
        shell_dirs = [*self.site.shell_plugin_dirs]
        default_shell_dir = self.prefix / "lib" / "flux" / "shell" / "plugins"
        if shell_dirs != [default_shell_dir]:  # flux-coral2 installed apart
            paths = ":".join(str(d) for d in [*shell_dirs, default_shell_dir])
            argv += [f"-Sconf.shell_pluginpath={paths}"]
        if self.statedir is not None:
            self.statedir.mkdir(parents=True, exist_ok=True)
            argv += [f"-Sstatedir={self.statedir}"]
        # the initial program writes where the instance listens, then waits for its stdin
        # to close (stop)
        program = f'echo "$FLUX_URI" >{urifile}.tmp && mv {urifile}.tmp {urifile} && exec cat'
        argv += ["/bin/sh", "-c", program]
        started = time.monotonic()
        with (self.workdir / "flux.log").open("ab") as log:
            # a process group of its own: stop() can end every broker, whatever happens
            self.process = subprocess.Popen(
                die_with_parent(argv),
                env=self.instance_env(),
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
            )
        deadline = started + timeout_s
        while not urifile.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise ConfigError(
                    f"the Flux instance did not start; see {self.workdir / 'flux.log'}:\n"
                    + (self.workdir / "flux.log").read_text(errors="replace")[-1500:]
                )
            time.sleep(0.05)
        self.uri = urifile.read_text().strip()
        # Fluxion has the graph and the queue is started: a job can be scheduled
        self.flux("queue", "status")
        self.started_s = time.monotonic() - started
        return self

    def versions(self) -> dict[str, str]:
        """The releases this instance runs: the site's (:class:`FluxSite`), with Fluxion's
        read from the instance's log where no package names it."""
        found = dict(self.site.versions)
        if found["flux-sched"] == "unknown" and self.uri:
            logged = fluxion_version_from_dmesg(self.flux("dmesg", check=False))
            found["flux-sched"] = logged or found["flux-sched"]
        return found

    def restart(self, timeout_s: float = 180) -> RealFlux:
        """Shut the instance down with its running jobs left running (as a system
        instance's restart leaves them, RFC 50), start it again over its statedir, and
        start the bridge again in it, as systemd restarts a site's; return self."""
        if self.statedir is None:
            raise ConfigError("an instance without a statedir keeps nothing across a restart")
        if self.bridge is not None and self.bridge.poll() is None:
            self.bridge.terminate()
            self.bridge.wait(timeout=30)
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.close()  # the initial program exits: the instance shuts down
        self.process.wait(timeout=timeout_s)
        self.start(timeout_s)
        if self._bridge_argv:
            self.start_bridge()
        return self

    def flux(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        """Run ``flux ARGS`` against the instance; return its output (ConfigError with its
        error output when it fails and ``check``)."""
        done = self.run(*args, timeout=timeout)
        if check and done.returncode != 0:
            raise ConfigError(f"flux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``flux ARGS``, the whole result (exit status, both streams)."""
        env = self.instance_env()
        env["FLUX_URI"] = self.uri
        return subprocess.run(
            [str(self.prefix / "bin" / "flux"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start_bridge(self, extra_env: dict[str, str] | None = None) -> None:
        """``coral2-pipeline flux-bridge`` in the instance, as a process of its own."""
        env = self.instance_env()
        env["FLUX_URI"] = self.uri
        env.update(extra_env or {})
        # -vv: each request delivered to Flux in its log, to tell what the instance was told
        argv = [sys.executable, "-m", "pipeline.cli", "flux-bridge", "-vv"]
        self._bridge_argv = argv
        with (self.workdir / "flux-bridge.log").open("ab") as log:
            self.bridge = subprocess.Popen(
                die_with_parent(argv), env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_for_dws()

    def _wait_for_dws(self, timeout_s: float = 60) -> None:
        """Wait until the bridge serves ``dws`` (``dws.status`` answers)."""
        deadline = time.monotonic() + timeout_s
        while True:
            done = self.run("python", "-c", _DWS_STATUS)
            if done.returncode == 0:
                return
            assert self.bridge is not None
            if self.bridge.poll() is not None or time.monotonic() > deadline:
                log = (self.workdir / "flux-bridge.log").read_text(errors="replace")
                raise ConfigError(f"the bridge did not serve dws.*:\n{log[-1500:]}")
            time.sleep(0.1)

    def kill_bridge(self) -> None:
        """SIGKILL the bridge (a crash: nothing acknowledged)."""
        if self.bridge is not None and self.bridge.poll() is None:
            self.bridge.kill()
            self.bridge.wait()

    def stop(self) -> None:
        """Stop the bridge, then the instance."""
        if self.bridge is not None and self.bridge.poll() is None:
            self.bridge.terminate()
            try:
                self.bridge.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.bridge.kill()
                self.bridge.wait()
        if self.process is not None and self.process.poll() is None:
            self.flux("cancel", "--all", check=False)
            assert self.process.stdin is not None
            self.process.stdin.close()  # the initial program exits: the instance shuts down
            with contextlib.suppress(subprocess.TimeoutExpired):  # then killed below
                self.process.wait(timeout=60)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):  # brokers left behind, if any
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


#: Run in the instance: exit 0 once something answers ``dws.status``.
_DWS_STATUS = "import flux; flux.Flux().rpc('dws.status', {}).get()"


def job_env(output: str) -> dict[str, Any]:
    """``env``'s output as a mapping."""
    env: dict[str, Any] = {}
    for line in output.splitlines():
        name, sep, value = line.partition("=")
        if sep:
            env[name] = value
    return env
