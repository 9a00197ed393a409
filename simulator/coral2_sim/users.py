"""The simulated system's Redis users by role: a password per role, made at start, in a file
of mode 0600 each; the ACL file (:func:`pipeline.platform.acl.acl_file`); and an ``admin``
user of the harness's own (its start's PING, ``ACL LOG``)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from pipeline.platform.acl import ROLES, acl_file
from pipeline.settings import Settings


@dataclass(frozen=True)
class DemoUsers:
    """The users, their files under ``workdir``, and the admin's login."""

    workdir: Path
    passwords: dict[str, str]
    admin: tuple[str, str]

    @classmethod
    def make(cls, workdir: Path, settings: Settings, hosts: Iterable[str]) -> DemoUsers:
        """Make the passwords and write their files and the ACL file."""
        passwords = {role: secrets.token_urlsafe(24) for role in ROLES}
        for role, password in passwords.items():
            path = workdir / f"{role}.pass"
            path.touch(mode=0o600)
            path.write_text(password + "\n")
        admin = secrets.token_urlsafe(24)
        aclfile = workdir / "users.acl"
        aclfile.touch(mode=0o600)
        # the demo's one node-worker process serves every compute: one user for its nodes
        roles = {role: password for role, password in passwords.items() if role != "node"}
        nodes = {"node": (list(hosts), passwords["node"])}
        aclfile.write_text(acl_file(settings, roles, nodes=nodes, admin=admin))
        return cls(workdir, passwords, ("admin", admin))

    @property
    def aclfile(self) -> Path:
        """The ACL file (``aclfile`` of redis.conf)."""
        return self.workdir / "users.acl"

    def role_env(self, role: str) -> dict[str, str]:
        """The settings that log a process in to Redis as ``role``."""
        return {
            "CORAL2_PIPELINE_PIPELINE__REDIS_USERNAME": role,
            "CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE": str(self.workdir / f"{role}.pass"),
        }

    def url(self, redis_url: str, role: str) -> str:
        """``redis_url`` logged in as ``role``."""
        return redis_url.replace("redis://", f"redis://{role}:{self.passwords[role]}@", 1)

    def denials(self, redis_url: str) -> list[str]:
        """What Redis refused a user since start (``ACL LOG``): a refusal means a role's
        rules miss something the pipeline does."""
        user, password = self.admin
        with redis.Redis.from_url(redis_url, username=user, password=password) as admin:
            entries: list[dict[str, Any]] = admin.acl_log(128)
        out = []
        for entry in entries:
            text = {
                k: v.decode(errors="replace") if isinstance(v, bytes) else v
                for k, v in entry.items()
            }
            out.append(
                f"Redis refused user {text.get('username')} {text.get('reason')} "
                f"{text.get('object')!r} ({text.get('count')}×, in {text.get('context')})"
            )
        return out
