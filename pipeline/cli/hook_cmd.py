"""``coral2-pipeline hook TOPIC --payload FILE|-``: a dws.* request from a perilog script."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, read_json, settings_of
from pipeline.services.hooks import Hooks

TOPICS = ("dws.create", "dws.setup", "dws.post_run", "dws.teardown", "dws.abort", "job-state")


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "hook",
        help="send one dws.* request (what dws-jobtap sends), e.g. from a perilog script",
        description=(
            "Validate the JSON payload of a dws.* request exactly as the flux bridge does and "
            "enqueue its task. Prints coral2_dws's answer as JSON; exits 1 when refused."
        ),
    )
    parser.add_argument("topic", choices=TOPICS, help="the request")
    parser.add_argument(
        "--payload",
        type=kinds.FILE_OR_STDIN,
        required=True,
        metavar="FILE",
        help="JSON payload; - = stdin",
    )
    parser.add_argument(
        "--owner-uid",
        type=kinds.count(most=2**32 - 2),
        default=None,
        help="instance owner uid (default: pipeline.owner_uid, else this process's uid)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dispatch the request; print the answer."""
    settings = settings_of(args)
    limit = settings.pipeline.limits.max_payload_bytes
    payload = read_json(args.payload, f"{args.topic} payload", limit)
    if not isinstance(payload, dict):
        raise CommandError(f"the {args.topic} payload must be a JSON object")
    from pipeline.platform.app import create_app, sender

    app = create_app(settings, set_current=False, tasks=False)
    owner = args.owner_uid if args.owner_uid is not None else settings.pipeline.owner_uid
    hooks = Hooks(
        settings,
        sender(app),
        owner_uid=os.getuid() if owner is None else owner,
    )
    answer = hooks.dispatch(args.topic, payload)
    print(json.dumps(answer))
    return 0 if answer["success"] else 1
