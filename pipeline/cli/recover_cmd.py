"""``coral2-pipeline recover``: have the pipeline rebuild its state from Flux and DWS now."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.common import settings_of
from pipeline.store import Store


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    sub.add_parser(
        "recover",
        help="rebuild the pipeline's state from Flux and DWS (after Redis lost writes)",
        description=(
            "Renew the store's generation (its epoch key), so that the bridge sends again, "
            "within a second, everything Flux still waits on — each running job's VNIs from "
            "its cray-slingshot event first, then the DWS requests whose wait has not ended, "
            "the RUN of every job held in its prolog and the CLEANUP of every job not clean "
            "— and the watcher lists every Workflow again at its next round and observes "
            "each. The services do this on their own when Redis restarts or is emptied; run "
            "it after Redis was restored from a backup without a restart, or when a job waits "
            "in Flux on something the pipeline has no record of. Every request is "
            "idempotent: nothing is done twice."
        ),
    ).set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Renew the generation; exit 0."""
    settings = settings_of(args)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    try:
        before = store.generation()
        store.renew_generation()
        after = store.generation()
    finally:
        store.close()
    print(
        f"store generation renewed ({_epoch(before)} -> {_epoch(after)}): the bridge sends "
        "again what Flux waits on within a second; the watcher lists every Workflow at its "
        "next round"
    )
    return 0


def _epoch(generation: str | None) -> str:
    return "none" if generation is None else generation.split(" ", 1)[1].split(" ", 1)[0][:8]
