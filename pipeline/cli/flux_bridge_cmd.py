"""``coral2-pipeline flux-bridge``: serve ``dws.*`` to dws-jobtap and deliver the outbox to Flux."""

from __future__ import annotations

import argparse
import os
from typing import Any

from pipeline.cli.common import add_verbose, load_mapping, settings_of, setup_logging
from pipeline.services.hooks import Hooks
from pipeline.store import Store


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "flux-bridge",
        help="serve the dws.* service for dws-jobtap.so and deliver the outbox to Flux",
        description=(
            "Replace coral2_dws for the unchanged dws-jobtap.so: answer dws.create/setup/"
            "post_run/teardown/abort/status as coral2_dws does, enqueueing the pipeline's "
            "tasks, and deliver the pipeline's outbox as job-manager.dws.* RPCs, job "
            "exceptions, KVS puts, memos and resource.drain. Needs flux-python "
            "(pip install 'coral2-pipeline[flux]'); run it in the Flux instance."
        ),
    )
    add_verbose(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run until the reactor stops."""
    setup_logging(args.verbose)
    from pipeline.clients.flux import import_flux
    from pipeline.services.bridge.main import run_bridge

    import_flux()  # fail first, with what to install, before touching anything else
    settings = settings_of(args)
    from pipeline.platform.app import create_app, sender

    app = create_app(settings)
    owner = settings.pipeline.owner_uid
    hooks = Hooks(
        settings,
        sender(app),
        owner_uid=os.getuid() if owner is None else owner,
    )
    from pipeline.platform.sealing import seal_of

    # it delivers only the outbox entries a worker signed (with signing on)
    store = Store.from_url(
        settings.store_url, settings.pipeline.key_prefix, seal_of(settings.pipeline)
    )
    mapping = load_mapping(settings.rabbit.mapping) if settings.rabbit.mapping else None
    run_bridge(hooks, store, mapping)
    return 0
