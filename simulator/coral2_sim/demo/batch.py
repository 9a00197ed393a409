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
    #: a fragment of the note of a refusal that is as expected too, when the scheduler's
    #: placement makes it so (a lustre job beside another whose MGT holds its rabbits)
    or_refused: str = ""

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
    DemoJob(
        "lustre",
        4,
        "#DW jobdw type=lustre capacity=1TiB name=lus",
        or_refused="needs a rabbit of the job with no Lustre MGT",
    ),
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


def moves_data(job: DemoJob) -> bool:
    """Whether the job has a ``copy_in`` or ``copy_out``: nnf-dm's data movement."""
    lines = [job.dw] if isinstance(job.dw, str) else list(job.dw or [])
    return any(word in line for line in lines for word in ("copy_in", "copy_out"))


def batch(n: int, *, real_dws: bool = False) -> list[DemoJob]:
    """``n`` jobs cycling through :data:`MIX`, with one lustre job in all: nnf gives a
    rabbit one Lustre MGT, so a second lustre job at once whose rabbits all hold one is
    refused (:func:`pipeline.model.breakdown.build_allocation_sets`), which the
    scheduler's placement would decide run by run, and the batch ends the same every
    run. On the real DWS (``real_dws``), the jobs of it that move no data (the real stack
    runs no nnf-dm; :func:`left_out_on_real_dws`)."""
    mix = [job for job in MIX if not (real_dws and moves_data(job))]
    jobs = [mix[i % len(mix)] for i in range(n)]
    first = next((i for i, job in enumerate(jobs) if is_lustre(job)), None)
    return [job for i, job in enumerate(jobs) if not is_lustre(job) or i == first]


def is_lustre(job: DemoJob) -> bool:
    lines = [job.dw] if isinstance(job.dw, str) else list(job.dw or [])
    return any("type=lustre" in line for line in lines)


def left_out_on_real_dws() -> list[str]:
    """What the batch leaves out on the real DWS, and why, one line each."""
    return [
        *(
            f"{job.kind}: not run on the real DWS: it needs nnf-dm's data movement"
            for job in MIX
            if moves_data(job)
        ),
        "lustre: one job in the batch, as on the simulator; more at once could not run on "
        "the real DWS: the mock nnf-sos gives every rabbit the one LNet address "
        "1.2.3.4@tcp, so two file systems' MGTs at once are at one address (multiple MGTs "
        "found)",
    ]
