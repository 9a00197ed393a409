"""``coral2-pipeline rabbitmapping``: the rabbitmapping JSON built from the cluster's
SystemConfiguration, Storages and Servers, as ``flux rabbitmapping`` builds it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, settings_of
from pipeline.clients.k8s import DwsClient, api_client
from pipeline.clients.kube import ONE_SHOT_TIMEOUT_S
from pipeline.clients.kube_auth import without_retries
from pipeline.errors import NotFound
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.rabbitmap_build import build_mapping


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "rabbitmapping",
        help="print the rabbitmapping JSON built from DWS (flux rabbitmapping)",
        description=__doc__,
    )
    parser.add_argument(
        "-k",
        "--kubeconfig",
        type=kinds.FILE,
        metavar="FILE",
        help="kubeconfig (default: pipeline.kubeconfig)",
    )
    parser.add_argument(
        "-i", "--indent", type=kinds.count(most=16), metavar="N", help="indent the JSON by N"
    )
    parser.add_argument("--nosort", action="store_true", help="keep the keys unsorted")
    parser.add_argument(
        "--ignore-external-allocations",
        action="store_true",
        help="do not subtract what Servers not made by Flux hold on each rabbit",
    )
    parser.add_argument(
        "--from-storages",
        action="store_true",
        help=(
            "take each rabbit's computes from its Storage (status.access.computes, the "
            "topology nnf mounts by) where SystemConfiguration disagrees, with a warning each"
        ),
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the mapping; exit 0."""
    settings = settings_of(args)
    kubeconfig = args.kubeconfig or settings.pipeline.kubeconfig or settings.rabbit.kubeconfig
    host = None if args.kubeconfig else settings.pipeline.api_host
    # one request at a time, each answered within ONE_SHOT_TIMEOUT_S or the command ends
    # (exit 4): an API server that accepts and never answers holds it no longer
    dws = DwsClient(
        without_retries(api_client(host=host, kubeconfig=kubeconfig)),
        request_timeout_s=ONE_SHOT_TIMEOUT_S,
        outage_budget_s=0.0,
    )
    dws.probe_version(settings.rabbit.dws_api_version)
    try:
        config = dws.get("systemconfigurations", "default")
    except NotFound:
        raise CommandError("the cluster has no SystemConfiguration 'default'") from None
    storages, _ = dws.list_objects("storages")
    # every Server: those of other workload managers hold capacity, and all of them
    # explain a Storage's free space (status.capacity) against its drives' total
    servers, _ = dws.list_objects("servers", all_namespaces=True)
    mapping = build_mapping(
        config,
        storages,
        servers,
        ignore_external_allocations=args.ignore_external_allocations,
        from_storages=args.from_storages,
        warn=lambda line: print(f"coral2-pipeline rabbitmapping: warning: {line}", file=sys.stderr),
    )
    RabbitMapping.model_validate(mapping)  # what getrabbit and dws2jgf will read
    print(json.dumps(mapping, indent=args.indent, sort_keys=not args.nosort))
    return 0
