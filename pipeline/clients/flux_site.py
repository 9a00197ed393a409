"""The Flux this machine has, found in one place: for ``demo --flux real``, the real-Flux
tier and ``make record-flux``.

A site installs flux-core, Fluxion and flux-coral2 from its own packages; the pipeline
never builds them. :func:`find_flux` looks for ``flux`` at ``$FLUX_PREFIX/bin`` or, without
``FLUX_PREFIX``, on ``PATH``, and checks, through Flux's own search paths, what the
pipeline's Flux side needs:

* flux-core 0.88 or newer (``flux version``) and its Python bindings, for the running
  Python;
* Fluxion's ``sched-fluxion-resource`` and ``sched-fluxion-qmanager`` modules, in
  ``$FLUX_MODULE_PATH_PREPEND`` or the prefix's module directory, as the broker finds them;
* flux-coral2's ``dws-jobtap.so`` and flux-core's ``perilog.so`` in the prefix's jobtap
  plugin directory, and flux-coral2's shell plugins ``dws_environment.so`` and
  ``cray-slingshot.so`` in its shell plugin directory, or all of flux-coral2's under
  ``$FLUX_CORAL2_PREFIX`` when it is installed apart.

What is missing is said one line each (:class:`FluxNotFound`). The versions of Fluxion and
flux-coral2 come from the package manager that installed their files (dpkg, rpm); else
Fluxion's from its versioned data library (``libfluxion-data.so.0.54.0``), or from the
running instance's log (:func:`fluxion_version_from_dmesg`), where its modules print it;
a flux-coral2 no package owns has no version to read: ``FLUX_CORAL2_VERSION`` says it
(``FLUXION_VERSION`` likewise), else it is ``unknown``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import ConfigError

#: The oldest flux-core whose job manager, perilog and bindings the pipeline is written for.
MINIMUM_CORE = (0, 88)
FLUXION_MODULES = ("sched-fluxion-resource.so", "sched-fluxion-qmanager.so")
JOBTAP_PLUGINS = {"dws-jobtap.so": "flux-coral2", "perilog.so": "flux-core"}
SHELL_PLUGINS = ("dws_environment.so", "cray-slingshot.so")
UNKNOWN = "unknown"
#: The line the tier and the demo print when there is no flux at all.
NO_FLUX = "no flux-core found (set FLUX_PREFIX)"


class FluxNotFound(ConfigError):
    """Raised when this machine lacks part of the Flux the pipeline's Flux side needs; its
    message is one line per missing part."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__("\n".join(missing))
        self.missing = missing


@dataclass(frozen=True)
class FluxSite:
    """An installed Flux with everything the pipeline's Flux side needs."""

    prefix: Path
    #: site-packages holding flux-core's ``flux`` package, for ``PYTHONPATH``
    pythonpath: Path
    #: flux-core, Fluxion (``flux-sched``) and flux-coral2 releases, or ``unknown``
    versions: dict[str, str]
    dws_jobtap: Path
    perilog: Path
    #: the directories of flux-coral2's shell plugins, for ``conf.shell_pluginpath``
    shell_plugin_dirs: tuple[Path, ...] = field(default=())
    #: ``FLUX_MODULE_PATH_PREPEND`` for the broker, when Fluxion lies outside the prefix
    module_path_prepend: str = ""

    @property
    def flux(self) -> Path:
        """The ``flux`` command."""
        return self.prefix / "bin" / "flux"

    def describe(self) -> str:
        """One line: which releases, where."""
        v = self.versions
        return (
            f"flux-core {v['flux-core']}, Fluxion {v['flux-sched']}, "
            f"flux-coral2 {v['flux-coral2']} ({self.prefix})"
        )


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _core_version(flux: Path, env: Mapping[str, str]) -> str:
    try:
        done = subprocess.run(
            [str(flux), "version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=dict(env),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FluxNotFound([f"{flux} cannot run: {exc}"]) from None
    for line in done.stdout.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "libflux-core":
            return value.strip()
    raise FluxNotFound([f"`{flux} version` names no libflux-core (exit {done.returncode})"])


def _bindings(prefix: Path) -> Path | None:
    """The site-packages of ``prefix`` that holds ``flux/`` for this Python, if any."""
    tag = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for lib in ("lib", "lib64"):
        for packages in ("site-packages", "dist-packages"):
            candidate = prefix / lib / tag / packages
            if (candidate / "flux" / "__init__.py").exists():
                return candidate
    return None


def _other_bindings(prefix: Path) -> list[Path]:
    return sorted(prefix.glob("lib*/python3*/*-packages/flux/__init__.py"))


def package_version(path: Path) -> str:
    """The version of the package that installed ``path`` (dpkg, then rpm), or unknown."""
    for query in (["dpkg-query", "-S", str(path)], ["rpm", "-qf", "--qf", "%{VERSION}", str(path)]):
        if shutil.which(query[0]) is None:
            continue
        try:
            done = subprocess.run(query, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode != 0 or not done.stdout.strip():
            continue
        if query[0] == "rpm":
            return done.stdout.strip()
        package = done.stdout.split(":", 1)[0].strip()
        shown = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", package],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if shown.returncode == 0 and shown.stdout.strip():
            return shown.stdout.strip().split("-")[0]
    return UNKNOWN


def _fluxion_library_version(module: Path) -> str:
    """Fluxion's release from the name of its data library, which its build versions with
    the release (``libfluxion-data.so.0.54.0``), beside the modules' prefix."""
    lib = module.parent.parent.parent
    for found in sorted(lib.glob("libfluxion-data.so.*.*.*")):
        return found.name.removeprefix("libfluxion-data.so.")
    return UNKNOWN


def _first(directories: list[Path], name: str) -> Path | None:
    for directory in directories:
        if (directory / name).exists():
            return directory / name
    return None


def _flux_command(env: Mapping[str, str]) -> Path | None:
    prefix = env.get("FLUX_PREFIX")
    if prefix:
        return Path(prefix) / "bin" / "flux"
    found = shutil.which("flux", path=env.get("PATH", os.defpath))
    return Path(found).resolve() if found else None


def find_flux(env: Mapping[str, str] | None = None) -> FluxSite:
    """The Flux this machine has (module docstring); :class:`FluxNotFound` naming, one
    line each, what is missing."""
    env = os.environ if env is None else env
    flux = _flux_command(env)
    if flux is None:
        raise FluxNotFound([NO_FLUX])
    if not flux.exists():
        raise FluxNotFound([f"no flux-core found: {flux} does not exist (FLUX_PREFIX)"])
    prefix = flux.parent.parent
    core = _core_version(flux, env)
    missing: list[str] = []
    if _version_tuple(core) < MINIMUM_CORE:
        missing.append(f"flux-core {core} at {prefix} is too old: the pipeline needs 0.88 or newer")
    pythonpath = _bindings(prefix)
    if pythonpath is None:
        others = ", ".join(str(p.parent.parent) for p in _other_bindings(prefix))
        tag = f"{sys.version_info.major}.{sys.version_info.minor}"
        missing.append(
            f"flux-core's Python bindings for Python {tag} are not under {prefix}"
            + (f" (only {others})" if others else " (install flux-core's python3 bindings)")
        )
    modules = [Path(p) for p in env.get("FLUX_MODULE_PATH_PREPEND", "").split(":") if p]
    modules.append(prefix / "lib" / "flux" / "modules")
    fluxion = [_first(modules, name) for name in FLUXION_MODULES]
    for name, found in zip(FLUXION_MODULES, fluxion, strict=True):
        if found is None:
            where = ", ".join(str(m) for m in modules)
            missing.append(f"Fluxion's {name} is not in the module path ({where})")
    coral2 = env.get("FLUX_CORAL2_PREFIX")
    jobtap_dirs = [prefix / "lib" / "flux" / "job-manager" / "plugins"]
    shell_dirs = [prefix / "lib" / "flux" / "shell" / "plugins"]
    if coral2:
        jobtap_dirs.insert(0, Path(coral2) / "lib" / "flux" / "job-manager" / "plugins")
        shell_dirs.insert(0, Path(coral2) / "lib" / "flux" / "shell" / "plugins")
    plugins: dict[str, Path] = {}
    for name, project in JOBTAP_PLUGINS.items():
        found = _first(jobtap_dirs, name)
        if found is None:
            where = ", ".join(str(d) for d in jobtap_dirs)
            hint = " (set FLUX_CORAL2_PREFIX)" if project == "flux-coral2" and not coral2 else ""
            missing.append(f"{project}'s {name} is not in the jobtap plugin path ({where}){hint}")
        else:
            plugins[name] = found
    shell_found: list[Path] = []
    for name in SHELL_PLUGINS:
        found = _first(shell_dirs, name)
        if found is None:
            where = ", ".join(str(d) for d in shell_dirs)
            missing.append(f"flux-coral2's shell plugin {name} is not in {where}")
        elif found.parent not in shell_found:
            shell_found.append(found.parent)
    if missing:
        raise FluxNotFound(missing)
    assert pythonpath is not None and fluxion[0] is not None
    versions = {
        "flux-core": core,
        "flux-sched": package_version(fluxion[0]),
        "flux-coral2": package_version(plugins["dws-jobtap.so"]),
    }
    if versions["flux-sched"] == UNKNOWN:
        versions["flux-sched"] = _fluxion_library_version(fluxion[0])
    for key, variable in (
        ("flux-sched", "FLUXION_VERSION"),
        ("flux-coral2", "FLUX_CORAL2_VERSION"),
    ):
        if versions[key] == UNKNOWN and env.get(variable):
            versions[key] = env[variable]
    prepend = ":".join(str(m) for m in modules[:-1])
    return FluxSite(
        prefix=prefix,
        pythonpath=pythonpath,
        versions=versions,
        dws_jobtap=plugins["dws-jobtap.so"],
        perilog=plugins["perilog.so"],
        shell_plugin_dirs=tuple(shell_found),
        module_path_prepend=prepend,
    )


def fluxion_version_from_dmesg(dmesg: str) -> str | None:
    """Fluxion's release as its resource module logs it at load ("version 0.54.0")."""
    match = re.search(r"sched-fluxion-resource\S*\s.*?version (\S+)", dmesg)
    return match.group(1) if match else None
