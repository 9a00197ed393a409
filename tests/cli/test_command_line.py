"""The command line: same output and messages as the flux tools, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.cli import main
from tests.conftest import DATA, make_r

RZADAMS = {
    "computes": {f"rzadams{1001 + i}": f"rzadams{201 + i // 16}" for i in range(128)},
    "rabbits": {
        f"rzadams{201 + r}": {
            "capacity": 10**12,
            "hostlist": f"rzadams[{1001 + 16 * r}-{1016 + 16 * r}]",
        }
        for r in range(8)
    },
}


@pytest.fixture
def rzadams(tmp_path: Path) -> Path:
    path = tmp_path / "rzadams.json"
    path.write_text(json.dumps(RZADAMS))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_getrabbit_finds_the_computes_of_a_rabbit(
    capsys: pytest.CaptureFixture[str], rzadams: Path
) -> None:
    assert run(capsys, "getrabbit", "--mapping", str(rzadams), "rzadams202") == (
        0,
        "rzadams[1017-1032]\n",
        "",
    )


def test_getrabbit_finds_the_rabbits_of_computes(
    capsys: pytest.CaptureFixture[str], rzadams: Path
) -> None:
    assert (
        run(capsys, "getrabbit", "--mapping", str(rzadams), "-c", "rzadams[1001,1032]")[1]
        == "rzadams[201-202]\n"
    )


def test_getrabbit_without_arguments_lists_every_rabbit(
    capsys: pytest.CaptureFixture[str], rzadams: Path
) -> None:
    assert run(capsys, "getrabbit", "--mapping", str(rzadams))[1] == "rzadams[201-208]\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["rzadams201", "-c", "rzadams1001"],
            "Both rabbits and computes or jobids cannot be looked up at the same time",
        ),
        (["-c", "nothere1"], "Could not find compute nothere1"),
        (["rzadams999"], "Could not find rabbit rzadams999"),
    ],
)
def test_getrabbit_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], rzadams: Path, argv: list[str], message: str
) -> None:
    status, out, err = run(capsys, "getrabbit", "--mapping", str(rzadams), *argv)
    assert status == 1
    assert out == ""
    assert message in err
    assert err.count("\n") == 1


def test_getrabbit_without_a_mapping_says_how_to_configure_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CORAL2_PIPELINE_CONFIG", raising=False)
    status, _, err = run(capsys, "getrabbit")
    assert status == 1
    assert "'rabbit.mapping' key not set" in err


def test_getrabbit_reports_missing_and_unparsable_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert (
        "Could not find file" in run(capsys, "getrabbit", "--mapping", str(tmp_path / "x.json"))[2]
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert "could not be parsed as JSON" in run(capsys, "getrabbit", "--mapping", str(bad))[2]


def test_dws2jgf_reads_r_on_stdin(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "dws2jgf",
            "--cluster-name",
            "ElCapitan",
            "--no-validate",
            str(DATA / "rabbits.json"),
        ],
        input=json.dumps(make_r("compute-01")),
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(proc.stdout)
    assert len(doc["scheduling"]["graph"]["nodes"]) == 77


def test_dws2jgf_builds_r_from_a_flux_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "flux.toml"
    config.write_text('[[resource.config]]\nhosts = "compute-01"\ncores = "0-4"\n')
    status, out, _ = run(
        capsys,
        "dws2jgf",
        "--from-config",
        str(config),
        "--cluster-name",
        "compute",
        "--no-validate",
        str(DATA / "rabbits.json"),
    )
    assert status == 0
    doc: dict[str, Any] = json.loads(out)
    assert len(doc["scheduling"]["graph"]["nodes"]) == 81
    assert doc["scheduling"]["graph"]["nodes"][0]["metadata"]["name"] == "compute"


def test_dws2jgf_refuses_bad_r_without_writing_anything() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "dws2jgf", str(DATA / "rabbits.json")],
        input='{"version": 2, "execution": {}}',
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert "version" in proc.stderr


def test_breakdown_prints_resources_and_servers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bd = tmp_path / "bd.yaml"
    bd.write_text(
        """
kind: DirectiveBreakdown
metadata: {name: fluxjob-1-0}
status:
  ready: true
  storage:
    lifetime: job
    reference: {kind: Servers, name: fluxjob-1-0, namespace: default}
    allocationSets:
    - {allocationStrategy: AllocatePerCompute, minimumCapacity: 10737418240, label: xfs}
"""
    )
    resources = tmp_path / "res.json"
    resources.write_text(
        json.dumps([{"type": "node", "count": 2, "with": [{"type": "core", "count": 1}]}])
    )
    status, out, _ = run(
        capsys,
        "breakdown",
        "--breakdown",
        str(bd),
        "--resources",
        str(resources),
        "--nodes-per-rabbit",
        "r1=2",
    )
    assert status == 0
    result = json.loads(out)
    assert result["resources"][0]["with"][1] == {"type": "ssd", "count": 10, "exclusive": True}
    assert result["servers"][0]["allocationSets"][0]["storage"] == [
        {"allocationCount": 2, "name": "r1"}
    ]


def test_breakdown_rejections_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bd = tmp_path / "bd.yaml"
    bd.write_text("kind: DirectiveBreakdown\nstatus: {ready: false}\n")
    resources = tmp_path / "res.json"
    resources.write_text('[{"type": "node", "count": 1}]')
    status, _, err = run(capsys, "breakdown", "--breakdown", str(bd), "--resources", str(resources))
    assert status == 1
    assert err == "coral2-pipeline breakdown: Breakdown marked as not ready\n"


def test_a_bad_config_file_is_one_clear_error_and_exit_status_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[rabbit]\nbogus = 1\n")
    status, _, err = run(capsys, "--config", str(config), "getrabbit")
    assert status == 3  # a unit does not restart on it
    assert "unknown key 'bogus' in table [rabbit]" in err
    assert "Traceback" not in err


def test_getrabbit_finds_a_jobs_rabbits_in_the_job_store(
    capsys: pytest.CaptureFixture[str],
    rzadams: Path,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipeline.store import JobRecord, Store

    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", redis_url)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", "getrabbit")
    store = Store.from_url(redis_url, "getrabbit")
    store.jobs.create(JobRecord(jobid=124, rabbits=["rzadams202", "rzadams203"]))
    store.jobs.create(JobRecord(jobid=125))
    assert (
        run(capsys, "getrabbit", "--mapping", str(rzadams), "-j", "124")[1] == "rzadams[202-203]\n"
    )
    out = run(capsys, "getrabbit", "--mapping", str(rzadams), "-j", "ƒ39", "-c", "rzadams1001")
    assert out[1] == "rzadams[201-203]\n"
    assert (
        "No rabbits found for job 125"
        in run(capsys, "getrabbit", "--mapping", str(rzadams), "-j", "125")[2]
    )
    assert (
        "Could not find job 126"
        in run(capsys, "getrabbit", "--mapping", str(rzadams), "-j", "126")[2]
    )
    assert (
        "Lookup of job 12x failed"
        in run(capsys, "getrabbit", "--mapping", str(rzadams), "-j", "12x")[2]
    )
