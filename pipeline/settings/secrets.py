"""Secrets in files only their service can read.

A Redis password lives in the file named by ``pipeline.redis_password_file``
(mode 0600), never in the config file, which may sit where others can read
it: :func:`with_credentials` puts it (and ``pipeline.redis_username``, the
Redis ACL user) into every Redis URL the process uses. A config file that
does hold a password inline in a URL must itself be unreadable by others.
Either way a file holding a secret that other users can read is refused
with one line saying which file and the ``chmod`` that fixes it; so is the
signing key (``pipeline.platform.signing``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from pipeline.errors import ConfigError
from pipeline.model.files import read_text
from pipeline.settings.tables import Settings

#: The URL settings that name a Redis.
URL_KEYS = ("broker_url", "result_backend", "redis_url")


def check_private(path: str | Path, what: str) -> None:
    """Refuse ``path`` if it is missing or users other than its owner can read it."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ConfigError(f"{what} {str(path)!r}: {exc.strerror}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"{what} {str(path)!r} can be read by other users "
            f"(mode {stat.S_IMODE(mode):o}); run: chmod 600 {path}"
        )


def _userinfo(netloc: str) -> tuple[str | None, str | None, str]:
    """(user, password, hosts) of a URL's netloc, which may list several ``host:port``
    (the store's Sentinel form): parsed by hand, since urllib reads one host only."""
    info, at, hosts = netloc.rpartition("@")
    if not at:
        return None, None, netloc
    user, colon, password = info.partition(":")
    return (user or None), (password if colon and password else None), hosts


def _password_in(url: str) -> bool:
    return any(
        _userinfo(urlsplit(part.strip()).netloc)[1] for part in url.split(";") if part.strip()
    )


def check_config_file(settings: Settings, path: str | Path) -> None:
    """A config file whose URLs hold a password must be readable by its owner alone."""
    inline = [k for k in URL_KEYS if _password_in(getattr(settings.pipeline, k) or "")]
    if inline:
        try:
            check_private(path, "config file")
        except ConfigError as exc:
            raise ConfigError(
                f"{exc}; it holds a password in pipeline.{inline[0]}: better, move the "
                "password to the file named by pipeline.redis_password_file"
            ) from None


def _with(url: str, username: str | None, password: str) -> str:
    parts = []
    for part in url.split(";"):
        split = urlsplit(part.strip())
        user, inline, hosts = _userinfo(split.netloc)
        if inline:
            raise ConfigError(
                "pipeline.redis_password_file is set and a Redis URL holds a password too: "
                "remove the password from the URL"
            )
        who = quote(username or user or "", safe="")
        netloc = f"{who}:{quote(password, safe='')}@{hosts}"
        parts.append(urlunsplit((split.scheme, netloc, split.path, split.query, split.fragment)))
    return ";".join(parts)


def with_credentials(settings: Settings) -> Settings:
    """``settings`` with the Redis user and the password from its file in every Redis URL
    (unchanged when no password file is set)."""
    pipeline = settings.pipeline
    if pipeline.redis_password_file is None:
        return settings
    check_private(pipeline.redis_password_file, "pipeline.redis_password_file")
    password = read_text(
        pipeline.redis_password_file, "pipeline.redis_password_file", 64 * 1024
    ).strip()
    if not password or "\n" in password:
        raise ConfigError(
            f"pipeline.redis_password_file {pipeline.redis_password_file!r} must hold the "
            "password alone, on one line"
        )
    urls = {
        key: _with(value, pipeline.redis_username, password)
        for key in URL_KEYS
        if (value := getattr(pipeline, key))
    }
    return settings.model_copy(update={"pipeline": pipeline.model_copy(update=urls)})
