"""``pip install coral2-pipeline[node]``, a compute node's install, brings no Kubernetes
client, no HTTP client, no Flower and no Prometheus client; the node worker's command
is there, and a management command says in one line which extra it needs (exit 3)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.units import REPO, install, system_python

MANAGEMENT_ONLY = ("kubernetes", "httpx", "flower", "prometheus-client")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    python = system_python()
    if python is None:
        pytest.fail("no Python 3.11+ outside /root and /home to install with")
    where = tmp_path_factory.mktemp("node-install") / "opt"
    install(python, where, REPO, extra="node")
    yield where


def run(prefix: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(prefix / "bin" / argv[0]), *argv[1:]],
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


def test_the_node_install_has_no_management_package(prefix: Path) -> None:
    listed = run(prefix, "pip", "list", "--format=freeze").stdout.lower()
    names = {line.split("==")[0] for line in listed.splitlines()}
    assert "coral2-pipeline" in names
    assert not names & set(MANAGEMENT_ONLY), names & set(MANAGEMENT_ONLY)


def test_the_node_workers_command_is_there(prefix: Path) -> None:
    done = run(prefix, "coral2-pipeline", "node-worker", "--help")
    assert done.returncode == 0, done.stderr
    assert "--hostname" in done.stdout


def test_a_management_command_names_the_extra_it_needs(prefix: Path) -> None:
    done = run(prefix, "coral2-pipeline", "exporter")
    assert done.returncode == 3
    assert "install coral2-pipeline[management]" in done.stderr
    assert "Traceback" not in done.stderr
