"""``coral2-pipeline redis-acl``: the Redis users of each role, as an ACL file."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.common import CommandError, settings_of
from pipeline.errors import ConfigError, HostlistError
from pipeline.model.hostlist import expand_hostlist
from pipeline.platform.acl import ROLES, acl_file
from pipeline.settings.secrets import check_private


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "redis-acl",
        help="print the Redis ACL file of the pipeline's users, one per role",
        description=(
            "Print a Redis ACL file (redis.conf's aclfile, Redis 7.0 or later) with one user "
            "per role given, named after the role, holding the SHA-256 of the password in "
            f"its file (mode 0600), and the default user switched off. Roles: "
            f"{', '.join(ROLES)} (docs/security.md says what each may reach)."
        ),
    )
    parser.add_argument(
        "--password-file",
        action="append",
        default=[],
        metavar="ROLE=FILE",
        help="a role and the file of its password; repeat for each role",
    )
    parser.add_argument(
        "--nodes",
        metavar="HOSTLIST",
        help="the node user may reach these nodes' queues only (default: every node's)",
    )
    parser.set_defaults(func=run)


def _password(role_file: str) -> tuple[str, str]:
    role, equals, path = role_file.partition("=")
    if not equals or not path:
        raise CommandError(f"--password-file {role_file!r}: give ROLE=FILE")
    if role not in ROLES:
        raise CommandError(f"--password-file: unknown role {role!r}; roles: {', '.join(ROLES)}")
    check_private(path, f"--password-file {role}")
    try:
        password = open(path, encoding="utf8").read().strip()  # noqa: SIM115
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--password-file {role}: cannot read {path!r}: {exc}") from exc
    if not password or "\n" in password:
        raise CommandError(f"--password-file {role}: {path!r} must hold one password, one line")
    return role, password


def run(args: argparse.Namespace) -> int:
    """Print the file; exit 0."""
    if not args.password_file:
        raise CommandError("give at least one --password-file ROLE=FILE")
    passwords = dict(_password(item) for item in args.password_file)
    hosts = None
    if args.nodes is not None:
        try:
            hosts = expand_hostlist(args.nodes)
        except HostlistError as exc:
            raise CommandError(f"--nodes: {exc}") from exc
    print(acl_file(settings_of(args), passwords, hosts=hosts), end="")
    return 0
