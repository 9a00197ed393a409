"""The cxi_service backend parses the tool's recorded output and maps its errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from node_worker.cxi import ServiceRequest, create_job_services
from node_worker.cxi_cli import CxiServiceCli, descriptor, parse_list
from pipeline.errors import CxiBusy, CxiError, CxiNoSpace

LISTING = (Path(__file__).parents[1] / "data" / "cxi_service" / "list-v-cxi0.txt").read_text()


def test_a_verbose_listing_gives_totals_and_every_service() -> None:
    device = parse_list("cxi0", LISTING)
    assert device.totals["les"] == 16384 and device.totals["tgqs"] == 512
    default, job, system = device.services
    assert (default.id, default.vnis, default.uids, default.tcs) == (1, (1, 10), (), 0xF)
    assert default.limits["tles"] == (512, 512)
    assert (job.id, job.uids, job.vnis, job.tcs, job.enabled) == (
        5,
        (1001,),
        (1062, 1063),
        0xA,
        True,
    )
    assert job.limits["les"] == (16384, 1536)
    assert (system.id, system.system, system.enabled, system.limits) == (7, True, False, {})


def test_the_descriptor_repeats_vni_and_tc_keys_as_libcxi_reads_them() -> None:
    request = ServiceRequest(1001, (1062, 1063), {"txqs": (1024, 16)}, tcs=0xA)
    text = descriptor(request)
    assert "vnis:\n  vni: 1062\n  vni: 1063\n" in text
    assert "tcs:\n  tc: LOW_LATENCY\n  tc: BEST_EFFORT\n" in text
    assert "  - name: TXQs\n    max: 1024\n    res: 16\n" in text
    assert "  - name: LEs\n    max: 0\n    res: 0\n" in text
    assert "members:\n  - type: uid\n    id: 1001\n" in text


class Tool:
    """Plays cxi_service: recorded answers by command, the calls it was given."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(argv)
        code, out, err = self.answers[argv[1]]
        return subprocess.CompletedProcess(argv, code, out, err)


def test_a_prolog_through_the_tool_creates_a_service_on_each_device() -> None:
    tool = Tool(
        {"list": (0, LISTING, ""), "create": (0, "...\n\nSuccessfully created service: 8\n", "")}
    )
    created = create_job_services(CxiServiceCli(["cxi0"], run=tool), 2002, [3000], 8)
    assert created.services == {"cxi0": 8}
    assert tool.calls[-1][:4] == ["cxi_service", "create", "-d", "cxi0"]


@pytest.mark.parametrize(
    ("stderr", "error"),
    [
        ("cxi_service: Could not delete service 5: Device or resource busy\n", CxiBusy),
        ("cxi_service: Failed to create service: No space left on device\n", CxiNoSpace),
        ("cxi_service: Failed to get service_id 9: Invalid argument\n", CxiError),
    ],
)
def test_the_tools_errors_are_named(stderr: str, error: type[Exception]) -> None:
    cli = CxiServiceCli(["cxi0"], run=Tool({"delete": (1, "", stderr)}))
    with pytest.raises(error, match=stderr.strip().removeprefix("cxi_service: ")):
        cli.destroy("cxi0", 5)


def test_a_device_name_that_is_not_cxi_n_is_refused() -> None:
    with pytest.raises(ValueError, match="expected cxi<N>"):
        CxiServiceCli(["eth0"])
