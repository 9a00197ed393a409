"""``coral2-pipeline redis-acl``: the Redis users of each role, as an ACL file."""

from __future__ import annotations

import argparse
import secrets
from pathlib import Path
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, settings_of
from pipeline.errors import HostlistError
from pipeline.model.files import read_text
from pipeline.model.hostlist import expand_hostnames
from pipeline.platform.acl import ROLES, acl_file, node_user
from pipeline.platform.pki import write_private
from pipeline.settings.secrets import check_private


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "redis-acl",
        help="print the Redis ACL file of the pipeline's users, one per role",
        description=(
            "Print a Redis ACL file (redis.conf's aclfile, Redis 7.0 or later) with one user "
            "per role given, named after the role, and one user per node (node-<host>, "
            "reaching that node's queue only), each holding the SHA-256 of the password in "
            f"its file (mode 0600). Roles: {', '.join(r for r in ROLES if r != 'node')} "
            "(docs/security.md says what each may reach)."
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
        "--admin-password-file",
        type=kinds.FILE,
        metavar="FILE",
        help="a user admin that may do anything (ACL LOAD, CONFIG, BGSAVE, BGREWRITEAOF), "
        "with the password of FILE (mode 0600): the operator's, no service's",
    )
    parser.add_argument(
        "--nodes",
        metavar="HOSTLIST",
        help="one user node-<host> per node of HOSTLIST, each reaching its own queue only",
    )
    parser.add_argument(
        "--node-passwords",
        metavar="DIR",
        help="the directory of the node users' passwords, <host>.pass each (mode 0600)",
    )
    parser.add_argument(
        "--make-missing",
        action="store_true",
        help="write a new random password (mode 0600) for each node whose file is missing",
    )
    parser.set_defaults(func=run)


def _password(role_file: str) -> tuple[str, str]:
    role, equals, path = role_file.partition("=")
    if not equals or not path:
        raise CommandError(f"--password-file {role_file!r}: give ROLE=FILE")
    if role == "node":
        raise CommandError(
            "--password-file node: each node has a user of its own; give --nodes HOSTLIST "
            "--node-passwords DIR"
        )
    if role not in ROLES:
        raise CommandError(f"--password-file: unknown role {role!r}; roles: {', '.join(ROLES)}")
    return role, _read(path, f"--password-file {role}")


def _read(path: str | Path, what: str) -> str:
    check_private(path, what)
    password = read_text(path, what, 64 * 1024).strip()
    if not password or "\n" in password:
        raise CommandError(f"{what}: {str(path)!r} must hold one password, one line")
    return password


def _node_users(hosts: list[str], directory: str, make: bool) -> dict[str, tuple[list[str], str]]:
    users = {}
    root = Path(directory).resolve()
    for host in hosts:
        path = root / f"{host}.pass"
        if path.resolve().parent != root:  # a checked hostname cannot, but never outside
            raise CommandError(f"--nodes: {host!r} names a file outside --node-passwords")
        if make and not path.exists():
            write_private(path, (secrets.token_urlsafe(24) + "\n").encode())
        users[node_user(host)] = ([host], _read(path, f"the password of {node_user(host)}"))
    return users


def run(args: argparse.Namespace) -> int:
    """Print the file; exit 0."""
    if not args.password_file and args.nodes is None and args.admin_password_file is None:
        raise CommandError(
            "give --password-file ROLE=FILE for each role, --nodes for nodes, "
            "--admin-password-file for the operator"
        )
    admin = None
    if args.admin_password_file is not None:
        admin = _read(args.admin_password_file, "--admin-password-file")
    passwords = dict(_password(item) for item in args.password_file)
    nodes: dict[str, tuple[list[str], str]] = {}
    if args.nodes is not None:
        if args.node_passwords is None:
            raise CommandError("--nodes needs --node-passwords DIR (<host>.pass each)")
        try:
            hosts = expand_hostnames(args.nodes)
        except HostlistError as exc:
            raise CommandError(f"--nodes: {exc}") from exc
        nodes = _node_users(hosts, args.node_passwords, args.make_missing)
    print(acl_file(settings_of(args), passwords, nodes=nodes, admin=admin), end="")
    return 0
