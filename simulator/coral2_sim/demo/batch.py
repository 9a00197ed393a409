"""The lifecycle demo's batch: a mix of jobs, each with the outcome it must have."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The demo user whose jobs leave CXI services busy after they end: housekeeping drains
#: the node, and the demo sweeps it with ``coral2-pipeline slingshot clean``.
BUSY_UID = 1002
#: Copies from or to under this path fail in the simulated nnf-dm (``--fail-copies``).
BROKEN_COPIES = "/lus/global/demo/broken"


@dataclass(frozen=True)
class DemoJob:
    """One kind of job in the batch."""

    kind: str
    nodes: int
    dw: str | list[str] | None = None
    cancel: bool = False  # cancelled before it runs
    expect: str = "COMPLETED"  # COMPLETED, CANCELED or FAILED
    note: str = ""  # a fragment of the fatal exception's note, for expected failures
    slingshot: Any = None  # the job's cray-slingshot shell option (None: the site's default)
    userid: int = 1001

    def resources(self) -> list[dict[str, Any]]:
        task = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
        return [{"type": "node", "count": self.nodes, "with": [task]}]

    def system(self) -> dict[str, Any]:
        system: dict[str, Any] = {} if self.dw is None else {"dw": self.dw}
        if self.slingshot is not None:
            system["shell"] = {"options": {"cray-slingshot": self.slingshot}}
        return system


MIX: tuple[DemoJob, ...] = (
    DemoJob("xfs", 2, "#DW jobdw type=xfs capacity=64GiB name=scratch"),
    DemoJob("gfs2", 4, "#DW jobdw type=gfs2 capacity=128GiB name=shared"),
    DemoJob("no #DW", 2),
    DemoJob("raw", 1, "#DW jobdw type=raw capacity=256GiB name=blk"),
    DemoJob("lustre", 4, "#DW jobdw type=lustre capacity=1TiB name=lus"),
    DemoJob(
        "copy_in/out",
        2,
        [
            "#DW jobdw type=xfs capacity=32GiB name=io",
            "#DW copy_in source=/lus/global/demo/in destination=$DW_JOB_io/",
            "#DW copy_out source=$DW_JOB_io/ destination=/lus/global/demo/out",
        ],
    ),
    DemoJob("preset", 2, "scratch"),
    DemoJob(
        "cancelled",
        2,
        "#DW jobdw type=xfs capacity=64GiB name=scratch",
        cancel=True,
        expect="CANCELED",
    ),
    DemoJob(
        "two fs",
        2,
        "#DW jobdw type=xfs capacity=16GiB name=first "
        "#DW jobdw type=gfs2 capacity=16GiB name=second",
    ),
    DemoJob("no #DW", 1),
    DemoJob("2 VNIs", 2, slingshot={"vnicount": 2}),
    DemoJob("slingshot off", 1, slingshot="off"),
    DemoJob("busy NIC", 1, userid=BUSY_UID),
    DemoJob(
        "5 VNIs",
        1,
        slingshot={"vnicount": 5},
        expect="FAILED",
        note="VNI count must be within 1-4",
    ),
    DemoJob(
        "over policy",
        1,
        "#DW jobdw type=xfs capacity=4TiB name=huge",
        expect="FAILED",
        note="max is 2048 GiB per node",
    ),
    DemoJob(
        "copy from no Lustre",
        1,
        [
            "#DW jobdw type=xfs capacity=16GiB name=io",
            "#DW copy_in source=/scratch/demo/in destination=$DW_JOB_io/",
        ],
        expect="FAILED",
        note="global Lustre file system containing '/scratch/demo/in' not found",
    ),
    DemoJob(
        "failed copy",
        1,
        [
            "#DW jobdw type=xfs capacity=16GiB name=io",
            f"#DW copy_in source={BROKEN_COPIES}/in destination=$DW_JOB_io/",
        ],
        expect="FAILED",
        note="data movement operation failed during 'DataIn'",
    ),
    DemoJob(
        "bad #DW",
        1,
        "#DW jobdw type=zfs capacity=1GiB name=bad",
        expect="FAILED",
        note="invalid string 'zfs'",
    ),
)


def batch(n: int) -> list[DemoJob]:
    """``n`` jobs cycling through :data:`MIX`."""
    return [MIX[i % len(MIX)] for i in range(n)]
