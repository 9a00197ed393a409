"""``coral2-pipeline node-cert``: issue each node its own signing key and certificate."""

from __future__ import annotations

import argparse
import shutil
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, settings_of
from pipeline.errors import HostlistError
from pipeline.model.files import FileProblem, writable_directory
from pipeline.model.hostlist import expand_hostnames
from pipeline.platform.pki import NODE_CERT_DAYS, CertificateAuthority
from pipeline.settings.secrets import check_private


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "node-cert",
        help="issue each node of a hostlist its own key and certificate from the site CA",
        description=(
            "Write <host>.key (mode 0600) and <host>.crt for each node of HOSTLIST into "
            "--out, issued by the site CA (pipeline.site_ca_key and site_ca_certificate, "
            "or --ca-key and --ca-cert), the node's hostname as the certificate's name. "
            "Install <host>.key on that node alone; with --node-cert-store, each "
            "certificate is copied into the management side's security_node_cert_store."
        ),
    )
    parser.add_argument("hostlist", metavar="HOSTLIST", help="the nodes, e.g. compute[1-64]")
    parser.add_argument(
        "--out", type=kinds.DIR, required=True, help="directory for the keys and certificates"
    )
    parser.add_argument(
        "--ca-key", type=kinds.FILE, help="the site CA's private key (default: from config)"
    )
    parser.add_argument(
        "--ca-cert", type=kinds.FILE, help="the site CA's certificate (default: from config)"
    )
    parser.add_argument("--node-cert-store", type=kinds.DIR, help="also copy each certificate here")
    parser.add_argument(
        "--days",
        type=kinds.count(least=1, most=36_500),
        default=NODE_CERT_DAYS,
        help="validity (default %(default)s)",
    )
    parser.add_argument("--force", action="store_true", help="replace a node's existing pair")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Issue the pairs; print one line per node; exit 0."""
    pipeline = settings_of(args).pipeline
    ca_key = args.ca_key or pipeline.site_ca_key
    ca_cert = args.ca_cert or pipeline.site_ca_certificate
    if ca_key is None or ca_cert is None:
        raise CommandError(
            "node-cert needs the site CA: set pipeline.site_ca_key and "
            "pipeline.site_ca_certificate, or give --ca-key and --ca-cert"
        )
    try:
        hosts = expand_hostnames(args.hostlist)
    except HostlistError as exc:
        raise CommandError(f"HOSTLIST: {exc}") from exc
    check_private(ca_key, "the site CA key")
    ca = CertificateAuthority(ca_key, ca_cert)
    out = writable_directory(args.out, "--out", mode=0o700)
    store = (
        writable_directory(args.node_cert_store, "--node-cert-store")
        if args.node_cert_store
        else None
    )
    existing = [h for h in hosts if (out / f"{h}.key").exists()]
    if existing and not args.force:
        raise CommandError(
            f"{len(existing)} node(s) already have a key in {out} (first: {existing[0]}); "
            "give --force to replace them"
        )
    for host in hosts:
        try:
            _key, cert = ca.issue(out, host, days=args.days)
            if store is not None:
                shutil.copy(cert, store / cert.name)
        except OSError as exc:
            raise FileProblem(f"cannot write {host}'s pair: {exc}") from None
        print(f"{host}: {out / (host + '.key')} {cert}")
    return 0
