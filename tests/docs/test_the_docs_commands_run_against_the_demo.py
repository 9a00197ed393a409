"""Every block of the docs (docs/*.md) marked *Runs against the demo* runs, command by command,
on the demo's system (its Redis users, keys, Flux and node workers), with the settings
files the commands name made for it and ``$JOBID`` a job the demo ran: each command
exits 0 and prints each line the runbook shows under it (``…`` stands for anything)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from coral2_sim.demo.lifecycle import demo_system, run_batch
from coral2_sim.demo.model import sample_path
from coral2_sim.system import SimulatedSystem
from rich.console import Console

from pipeline.model.rabbitmap import RabbitMapping

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARK = "*Runs against the demo:*"
BIN = str(Path(sys.executable).parent)


@dataclass
class Command:
    line: str
    shows: list[str]


def runnable_blocks(text: str) -> list[list[Command]]:
    """The console blocks after each mark: each ``$`` command with the lines under it."""
    blocks, lines = [], text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        start = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        commands: list[Command] = []
        for raw in lines[start + 1 : end]:
            if raw.startswith("$ "):
                commands.append(Command(raw[2:], []))
            elif commands and raw.strip():
                commands[-1].shows.append(raw.strip())
        blocks.append(commands)
    return blocks


BLOCKS = [
    (path.name, block)
    for path in sorted(DOCS.glob("*.md"))
    for block in runnable_blocks(path.read_text())
]


@dataclass
class Demo:
    system: SimulatedSystem
    etc: Path
    jobid: int


def write_settings(system: SimulatedSystem, etc: Path) -> None:
    """``monitoring.toml`` and ``worker.toml`` for the demo: each names its Redis user and
    password file; the worker's its key (the rest comes from the demo's environment)."""
    assert system.users is not None
    etc.mkdir(parents=True, exist_ok=True)
    for name, role in (("monitoring", "monitoring"), ("worker", "management")):
        login = system.users.role_env(role)
        (etc / f"{name}.toml").write_text(
            "[pipeline]\n"
            f'redis_username = "{login["CORAL2_PIPELINE_PIPELINE__REDIS_USERNAME"]}"\n'
            f'redis_password_file = "{login["CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE"]}"\n'
        )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    mapping = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
    with demo_system(mapping, config=str(sample_path("sample-cluster.toml"))) as system:
        report = run_batch(
            system, Console(file=io.StringIO(), width=200), jobs=6, sweep=False, cases=False
        )
        assert report.ok, (report.unexpected, report.leaks)
        assert system.store is not None
        told = [
            j for j in report.jobids if any(e.what.startswith("Teardown ready")
            for e in system.store.timeline.read(j))
        ]  # fmt: skip
        etc = tmp_path_factory.mktemp("etc")
        write_settings(system, etc)
        yield Demo(system, etc, told[0])


def run(demo: Demo, command: Command) -> subprocess.CompletedProcess[str]:
    line = command.line.replace("/etc/coral2-pipeline/", f"{demo.etc}/")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_")}
    signing = ("SECURITY_", "SITE_CA")
    settings = demo.system.env()
    if "monitoring.toml" in line:  # the monitoring side holds no key
        settings = {k: v for k, v in settings.items() if not any(s in k for s in signing)}
    env |= {k: v for k, v in settings.items() if k.startswith("CORAL2_")}
    env |= {"JOBID": str(demo.jobid), "PATH": f"{BIN}:{env.get('PATH', '')}", "COLUMNS": "200"}
    assert demo.system.kube is not None
    env["KUBECONFIG"] = str(demo.system.kube.admin_kubeconfig)
    return subprocess.run(
        ["bash", "-c", line], env=env, capture_output=True, check=False, text=True, timeout=120
    )


def shown(expected: str, output: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("…"))
    flat = " ".join(output.split())
    return re.search(pattern, flat) is not None or re.search(pattern, output) is not None


def test_the_docs_have_blocks_that_run_against_the_demo() -> None:
    assert {name for name, _ in BLOCKS} >= {"runbook.md", "operations.md"}
    assert len(BLOCKS) >= 8


def block_id(where: str, block: list[Command]) -> str:
    return f"{where}: " + " ; ".join(c.line.split()[3] for c in block)


@pytest.mark.parametrize(("where", "block"), BLOCKS, ids=[block_id(*b) for b in BLOCKS])
def test_the_block_runs_and_prints_what_the_docs_show(
    demo: Demo, where: str, block: list[Command]
) -> None:
    for command in block:
        done = run(demo, command)
        assert done.returncode == 0, (where, command.line, done.stdout, done.stderr)
        for line in command.shows:
            assert shown(line, done.stdout), (where, command.line, line, done.stdout)
