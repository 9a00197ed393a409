"""``coral2-pipeline flux-prolog``: the job-manager prolog that holds each job until the
pipeline has done its node work.

Flux's ``perilog.so`` runs it on rank 0, as the instance owner, for every job
entering RUN (``[job-manager.prolog] command``), with ``FLUX_JOB_ID`` set, and
starts the job only once it exits 0. It blocks on the job's verdict in Redis
(``pipeline.store.releases``) — no polling — and exits 0 when the pipeline
releases the job. When the pipeline fails the job it has already raised an
exception naming the cause, which makes Flux cancel this prolog: the prolog
waits while that exception is still in the outbox (the bridge is down or
behind), so that the job fails with the pipeline's reason; if Flux has not
cancelled it ``--grace`` seconds after the exception was delivered, it prints
the cause and exits 1, and perilog fails the job.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, settings_of
from pipeline.errors import InputError
from pipeline.model.jobid import decode_jobid

#: How often a failed job's prolog looks whether the pipeline's exception was delivered (s).
POLL_S = 0.5


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "flux-prolog",
        help="job-manager prolog: wait until the pipeline releases the job",
        description=(
            "Run by Flux's perilog.so on rank 0 for every job entering RUN. Exits 0 when "
            "the pipeline has done the job's node work (CXI services, clientmount), 1 when "
            "it failed the job. The job comes from --jobid or FLUX_JOB_ID."
        ),
    )
    parser.add_argument("-j", "--jobid", help="the job (decimal or F58; default $FLUX_JOB_ID)")
    parser.add_argument(
        "--timeout",
        type=kinds.seconds(zero=True),
        default=0.0,
        metavar="S",
        help="give up after S seconds and exit 1 (default 0: wait for ever; perilog's own "
        "prolog timeout applies)",
    )
    parser.add_argument(
        "--node",
        type=kinds.hostname,
        metavar="HOST",
        help="run as this node's per-rank prolog (prolog.d/coral2-pipeline, with the node's "
        "own Redis user): wait for the verdict written for HOST (pipeline.node_prologs)",
    )
    parser.add_argument(
        "--grace",
        type=kinds.seconds(zero=True),
        default=10.0,
        metavar="S",
        help="after a failure verdict, once the pipeline's exception is delivered, wait "
        "S seconds for Flux to cancel the prolog before exiting 1 (default 10)",
    )
    parser.set_defaults(func=run)


def _jobid(args: argparse.Namespace) -> int:
    text = args.jobid or os.environ.get("FLUX_JOB_ID")
    if not text:
        raise CommandError("FLUX_JOB_ID is not set.  Try --jobid=ID.")
    try:
        return decode_jobid(text)
    except InputError as exc:
        raise CommandError(f"error parsing jobid {text!r}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Wait for the job's verdict; exit 0 (release) or 1 (failed, or timed out)."""
    jobid = _jobid(args)
    if args.timeout < 0 or args.grace < 0:
        raise CommandError("--timeout and --grace must not be negative")
    from pipeline.store import Store

    settings = settings_of(args)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    deadline = time.monotonic() + args.timeout if args.timeout else None
    try:
        verdict = store.releases.wait(jobid, args.timeout or None, args.node)
        if verdict is not None and verdict.status != 0 and args.node is None:
            # Flux cancels us once the pipeline's exception lands
            while store.exceptions_on_their_way(jobid):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                time.sleep(POLL_S)
    finally:
        store.close()
    if verdict is None:
        print(
            f"flux-prolog: job {args.jobid or os.environ.get('FLUX_JOB_ID')}: "
            f"not released in {args.timeout:g} s",
            file=sys.stderr,
        )
        return 1
    if verdict.status == 0:
        return 0
    time.sleep(args.grace)
    print(f"flux-prolog: {verdict.note}", file=sys.stderr)
    return 1
