"""Every shipped unit passes ``systemd-analyze verify`` (the install prefix pointed at
this environment, and a stand-in flux.service for the bridge to bind to), and every
unit's exposure under ``systemd-analyze security`` is 4.0 or less ("OK")."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.units import PREFIX, UNITS

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="needs systemd-analyze (systemd)"
)

SHIPPED = sorted(UNITS.glob("*.service"))


def unit_dir(tmp_path: Path) -> Path:
    """The units with the prefix of this environment's venv, beside a stand-in flux.service."""
    here = str(Path(sys.executable).parent.parent)
    for unit in SHIPPED:
        (tmp_path / unit.name).write_text(unit.read_text().replace(PREFIX, here))
    (tmp_path / "flux.service").write_text(
        "[Unit]\nDescription=Flux\n[Service]\nExecStart=/bin/true\n"
    )
    return tmp_path


def analyze(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"SYSTEMD_UNIT_PATH": f"{tmp_path}:", "PATH": "/usr/bin:/bin", "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run(
        ["systemd-analyze", *argv], capture_output=True, text=True, env=env, cwd=tmp_path,
        check=False, timeout=120,
    )  # fmt: skip


def test_every_unit_verifies_without_a_warning(tmp_path: Path) -> None:
    units = unit_dir(tmp_path)
    names = [u.name for u in SHIPPED if not u.name.endswith("@.service")]
    names += [u.name.replace("@.", "@1.") for u in SHIPPED if u.name.endswith("@.service")]
    done = analyze(units, "verify", *names)
    assert done.returncode == 0 and done.stderr == "", done.stderr


@pytest.mark.parametrize("unit", SHIPPED, ids=[u.name for u in SHIPPED])
def test_the_units_exposure_is_at_most_4(unit: Path, tmp_path: Path) -> None:
    units = unit_dir(tmp_path)
    name = unit.name.replace("@.", "@1.")
    done = analyze(units, "security", "--offline=true", "--no-pager", name)
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert found is not None, done.stdout + done.stderr
    assert float(found.group(1)) <= 4.0, done.stdout
