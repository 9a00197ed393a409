"""The walk-through ``coral2-pipeline demo`` runs on the bundled sample cluster.

Until the lifecycle lands, the demo exercises the domain model end to end
on real inputs: it builds R from the sample Flux config, encodes the JGF
the scheduler would load, then takes a batch of jobs through what happens
at submission and at allocation time — directive expansion with presets,
the DWS webhook's syntax checks, nnf's breakdowns, the jobspec rewrite with
policy maximums, placement on the rabbits and the Servers allocation sets.
Each sample job states the outcome it must have; a mismatch fails the demo.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from pipeline.cli.tables import report_console
from pipeline.errors import InputError, PipelineError
from pipeline.model.breakdown import (
    ResourceLimits,
    apply_breakdowns,
    build_allocation_sets,
    summarize_breakdowns,
)
from pipeline.model.directives import (
    check_persistent_creation,
    check_workflow,
    parse_directives,
)
from pipeline.model.dw_expansion import expand_directives
from pipeline.model.hostlist import encode_hostlist
from pipeline.model.jgf import Dws2Jgf
from pipeline.model.nnf import breakdown_for
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.resource_set import r_from_config
from pipeline.settings import Settings, load_settings

if TYPE_CHECKING:
    from pipeline.clients.flux_site import FluxSite

OWNER_UID = 0
USER_UID = 31193


@dataclass(frozen=True)
class SampleJob:
    """A job of the demo batch and the outcome it must have."""

    name: str
    dw: str | list[str]
    nodes: int
    expect: str  # "accepted" or a fragment of the rejection message
    userid: int = USER_UID


SAMPLE_JOBS = (
    SampleJob("xfs-scratch", "#DW jobdw type=xfs capacity=100GiB name=scratch", 4, "accepted"),
    SampleJob("preset", "scratch", 8, "accepted"),
    SampleJob("lustre+copy_in", "lustre-io", 32, "accepted"),
    SampleJob(
        "gfs2+raw",
        [
            "#DW jobdw type=gfs2 capacity=200GiB name=shared",
            "#DW jobdw type=raw capacity=1TiB name=blk",
        ],
        12,
        "accepted",
    ),
    SampleJob("no-storage", "#DW persistentdw name=shared-data", 2, "accepted"),
    SampleJob("too-much-xfs", "#DW jobdw type=xfs capacity=4TiB name=huge", 2, "max is 2048 GiB"),
    SampleJob("bad-capacity", "#DW jobdw type=xfs capacity=10G name=x1", 1, "invalid string '10G'"),
    SampleJob(
        "copy-from-raw",
        "#DW jobdw type=raw capacity=1TiB name=blk "
        "#DW copy_out source=$DW_JOB_blk destination=/out",
        1,
        "raw allocations",
    ),
    SampleJob(
        "persistent-by-user",
        "#DW create_persistent type=lustre capacity=1TiB name=proj",
        1,
        "only the instance owner",
    ),
    SampleJob(
        "unknown-daemon",
        "#DW jobdw type=xfs capacity=1TiB name=xc requires=user-container-auth",
        1,
        "does not offer",
    ),
)


def sample_path(name: str) -> Path:
    """Return the path of a bundled sample file."""
    return Path(str(resources.files("pipeline") / "data" / name))


@dataclass
class Outcome:
    """What happened to one sample job."""

    job: SampleJob
    verdict: str
    ssd_gib_per_node: int | None = None
    servers: list[dict[str, Any]] | None = None
    hosts: str = ""


def _run_job(
    job: SampleJob,
    jobid: int,
    settings: Settings,
    mapping: RabbitMapping,
    free: list[str],
) -> Outcome:
    rabbit = settings.rabbit
    try:
        lines = expand_directives(job.dw, rabbit.presets)
        check_persistent_creation(
            lines,
            userid=job.userid,
            owner_uid=OWNER_UID,
            restrict=rabbit.restrict_persistent_creation,
        )
        directives = parse_directives(lines)
        problem = check_workflow(directives)
        if problem:
            raise InputError(problem)
        workflow = f"fluxjob-{jobid}"
        breakdowns = [
            b
            for i, d in enumerate(directives)
            if (b := breakdown_for(d, workflow=workflow, index=i, userid=job.userid)) is not None
        ]
        summarize_breakdowns(breakdowns, allowed_daemons=rabbit.allowed_daemons)
        resources_in: list[dict[str, Any]] = [
            {
                "type": "node",
                "count": job.nodes,
                "with": [
                    {
                        "type": "slot",
                        "count": 1,
                        "label": "task",
                        "with": [{"type": "core", "count": 96}],
                    }
                ],
            }
        ]
        limits = ResourceLimits(**rabbit.policy.maximums.model_dump())
        rewritten = apply_breakdowns(breakdowns, resources_in, limits=limits) or resources_in
        ssd = next((w["count"] for w in rewritten[0].get("with", []) if w["type"] == "ssd"), 0)
        if len(free) < job.nodes:
            raise InputError(f"only {len(free)} computes free, job needs {job.nodes}")
        hosts = [free.pop(0) for _ in range(job.nodes)]
        counts = mapping.nodes_per_rabbit(hosts)
        servers = [
            {
                "servers": b["status"]["storage"]["reference"]["name"],
                "sets": build_allocation_sets(
                    b["status"]["storage"]["allocationSets"], counts, len(hosts)
                ),
            }
            for b in breakdowns
            if "storage" in b["status"]
        ]
        return Outcome(job, "accepted", ssd, servers, encode_hostlist(hosts))
    except PipelineError as exc:
        return Outcome(job, f"rejected: {exc}")


def _jgf_summary(console: Console, settings: Settings, mapping: RabbitMapping) -> None:
    raw_r = r_from_config(settings.resource.config)
    start = time.perf_counter()
    encoder = Dws2Jgf(raw_r, mapping, cluster_name="sample", exclude=settings.resource.exclude)
    text = "".join(encoder.chunks_of_text())
    elapsed = time.perf_counter() - start
    graph = json.loads(text)["scheduling"]["graph"]
    kinds = Counter(v["metadata"]["type"] for v in graph["nodes"])
    table = Table(title="dws2jgf: the scheduler's resource graph of the sample cluster")
    table.add_column("vertex type")
    table.add_column("count", justify="right")
    for kind, count in kinds.items():
        table.add_row(kind, str(count))
    table.add_row("[bold]edges[/bold]", str(len(graph["edges"])))
    console.print(table)
    console.print(
        f"  {len(graph['nodes'])} vertices, {len(text):,} bytes of JGF in {elapsed * 1000:.1f} ms"
    )


def run_demo(
    config: str | None = None,
    console: Console | None = None,
    *,
    lifecycle: bool = True,
    jobs: int = 24,
    as_json: bool = False,
    keep_running: bool = False,
    flux_site: FluxSite | None = None,
    keep: bool = False,
    systemstatus: bool = True,
    dws: str = "sim",
) -> int:
    """Run the walk-through, then the lifecycle (on the simulated Flux, or with ``flux``
    ``real`` on a real one; ``systemstatus=False``: on a DWS without SystemStatus
    ``default``; ``dws="real"``: on the real DWS and nnf-sos); return 0 when everything
    ended as expected."""
    config = config or str(sample_path("sample-cluster.toml"))
    settings = load_settings(config)
    mapping = RabbitMapping.load(
        settings.rabbit.mapping or sample_path("sample-rabbitmapping.json")
    )
    if as_json:
        from coral2_sim.demo.lifecycle import run_lifecycle_demo

        quiet = report_console(stderr=True)
        return run_lifecycle_demo(
            quiet, mapping, config=config, jobs=jobs, as_json=True, flux_site=flux_site,
            keep=keep, systemstatus=systemstatus, dws=dws,
        )  # fmt: skip
    console = console or report_console()
    console.rule("coral2-pipeline demo: the domain model on the sample cluster")
    _jgf_summary(console, settings, mapping)
    free = list(mapping.computes)
    outcomes = [
        _run_job(job, 1000 + i, settings, mapping, free) for i, job in enumerate(SAMPLE_JOBS)
    ]
    table = Table(title="submission and allocation of the sample batch")
    for column in ("job", "nodes", "ssd GiB/node", "computes", "outcome", "as expected"):
        table.add_column(column)
    mismatches = 0
    for out in outcomes:
        expected = (
            out.verdict == "accepted"
            if out.job.expect == "accepted"
            else out.job.expect in out.verdict
        )
        mismatches += not expected
        table.add_row(
            out.job.name,
            str(out.job.nodes),
            "" if out.ssd_gib_per_node is None else str(out.ssd_gib_per_node),
            out.hosts,
            "accepted" if out.verdict == "accepted" else "rejected",
            "[green]yes[/green]" if expected else "[red]NO[/red]",
        )
    console.print(table)
    for out in outcomes:
        if out.verdict != "accepted":
            console.print(f"  [bold]{out.job.name}[/bold] {out.verdict}", soft_wrap=True)
    servers = Table(title="Servers allocation sets the pipeline would write")
    for column in ("job", "Servers", "label", "allocationSize", "rabbit × count"):
        servers.add_column(column)
    for out in outcomes:
        for entry in out.servers or []:
            for aset in entry["sets"]:
                servers.add_row(
                    out.job.name,
                    entry["servers"],
                    aset["label"],
                    f"{aset['allocationSize']:,}",
                    ", ".join(f"{s['name']}×{s['allocationCount']}" for s in aset["storage"]),
                )
    console.print(servers)
    accepted = sum(o.verdict == "accepted" for o in outcomes)
    console.print(
        f"demo: {len(outcomes)} jobs, {accepted} accepted, {len(outcomes) - accepted} rejected; "
        f"{mismatches} unexpected outcomes"
    )
    status = 1 if mismatches else 0
    if lifecycle:
        from coral2_sim.demo.lifecycle import run_lifecycle_demo

        console.rule("the lifecycle: Flux, the pipeline, DWS and the node workers, all running")
        status |= run_lifecycle_demo(
            console, mapping, config=config, jobs=jobs, keep_running=keep_running,
            flux_site=flux_site, keep=keep, systemstatus=systemstatus, dws=dws,
        )  # fmt: skip
    return status
