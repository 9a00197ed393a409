"""Reading a file a command or a setting names: one way, for every one of them.

The only file I/O of the pure rooms: a named file read whole into text (and parsed as
JSON, TOML or YAML), bounded in size and depth, with every way it can fail — missing, a
directory, unreadable, too large, not UTF-8, not the format, nested too deep — said in
one line naming the file and what it was meant to be (:class:`FileProblem`, a
:class:`~pipeline.errors.ConfigError`: the commands exit 3 for it).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

from pipeline.errors import ConfigError

#: The largest file read whole (a whole machine's rabbitmapping is a few MiB).
MAX_BYTES = 64 * 1024 * 1024
#: The largest key or certificate file read (PEM: a few KiB).
PEM_BYTES = 1024 * 1024
#: The deepest a file's lists and tables nest.
MAX_DEPTH = 64


class FileProblem(ConfigError):
    """Raised when a named file cannot be read as text; the message is one line."""


def read_bytes(path: str | Path, what: str, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of ``path``, which holds ``what`` (``-``: standard input);
    :class:`FileProblem` saying why not."""
    shown = "stdin" if str(path) == "-" else repr(str(path))
    try:
        if str(path) == "-":
            data = sys.stdin.buffer.read(max_bytes + 1)
        else:
            # opened without blocking (a FIFO would wait for a writer for ever), and read
            # only once it shows itself a regular file: no FIFO, device or socket (a
            # socket cannot even be opened: named before)
            kind = _kind(os.stat(path).st_mode)
            if kind is not None and kind != "a directory":
                raise FileProblem(f"{what} {shown} is {kind}, not a regular file")
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
            with os.fdopen(fd, "rb") as handle:
                kind = _kind(os.fstat(fd).st_mode)
                if kind == "a directory":
                    raise FileProblem(f"{what} {shown} is a directory, not a file")
                if kind is not None:
                    raise FileProblem(f"{what} {shown} is {kind}, not a regular file")
                os.set_blocking(fd, True)
                data = handle.read(max_bytes + 1)
    except IsADirectoryError:
        raise FileProblem(f"{what} {shown} is a directory, not a file") from None
    except OSError as exc:
        raise FileProblem(f"cannot read {what} {shown}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a path with a NUL byte in it
        raise FileProblem(f"cannot read {what} {shown}: {exc}") from None
    if len(data) > max_bytes:
        raise FileProblem(f"{what} {shown} is larger than {max_bytes:,} bytes") from None
    return data


def _kind(mode: int) -> str | None:
    """What a file of ``mode`` is, when it is not a regular file (None when it is)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def read_text(path: str | Path, what: str, max_bytes: int = MAX_BYTES) -> str:
    """The text of ``path``, which holds ``what`` (``-``: standard input);
    :class:`FileProblem` saying why not."""
    data = read_bytes(path, what, max_bytes)
    shown = "stdin" if str(path) == "-" else repr(str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            f"{what} {shown} is not UTF-8 text (byte {exc.start}: {data[exc.start]:#04x})"
        ) from None


#: The most values a file's contents may come to, YAML's aliases expanded: far above any
#: real configuration, far below what would exhaust memory or time.
MAX_VALUES = 2_000_000


def shape_problem(
    value: Any, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES
) -> str | None:
    """Why ``value`` (parsed JSON, TOML or YAML) may not be used, or None: it nests more
    than ``max_depth`` deep, comes to more than ``max_values`` values once YAML's aliases
    are expanded (a "billion laughs"), or holds itself. Each list and table is visited
    once, however many aliases name it: linear in what was parsed, never in what it would
    expand to."""
    measured: dict[int, tuple[int, int]] = {}  # id → (depth, values)
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, closing = stack.pop()
        if not isinstance(node, dict | list) or (id(node) in measured and not closing):
            continue
        children = list(node.values() if isinstance(node, dict) else node)
        nested = [c for c in children if isinstance(c, dict | list)]
        if not closing:
            if id(node) in open_:
                return "holds itself (a YAML alias of a value within it)"
            open_.add(id(node))
            stack.append((node, True))
            for child in nested:
                if id(child) in open_:
                    return "holds itself (a YAML alias of a value within it)"
                stack.append((child, False))
            continue
        open_.discard(id(node))
        depth = 1 + max((measured[id(c)][0] for c in nested), default=0)
        count = 1 + len(children) + sum(measured[id(c)][1] for c in nested)
        if depth > max_depth:
            return f"nests more than {max_depth} levels deep"
        if count > max_values:
            return f"comes to more than {max_values:,} values (YAML aliases expanded)"
        measured[id(node)] = (depth, count)
    return None


def load(
    path: str | Path,
    what: str,
    form: Literal["json", "toml", "yaml"],
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """``path``'s text parsed as ``form`` (every YAML document of it, as a list);
    :class:`FileProblem` naming the file for anything wrong with it — unreadable, not
    UTF-8, not ``form``, nested more than ``max_depth`` deep."""
    text = read_text(path, what, max_bytes)
    shown = "stdin" if str(path) == "-" else repr(str(path))
    try:
        if form == "json":
            value: Any = json.loads(text)
        elif form == "toml":
            value = tomllib.loads(text)
        else:
            import yaml  # loaded for a YAML file only: most commands read none

            try:
                value = [doc for doc in yaml.safe_load_all(text) if doc is not None]
            except yaml.YAMLError as exc:
                raise ValueError(str(exc)) from None
    except RecursionError:
        raise FileProblem(f"{what} {shown} is nested too deeply") from None
    except ValueError as exc:  # JSON's and TOML's errors are ValueErrors (YAML's made so)
        where = " ".join(str(exc).split())
        raise FileProblem(f"{what} {shown} is not valid {form.upper()}: {where}") from None
    if problem := shape_problem(value, max_depth):
        raise FileProblem(f"{what} {shown} {problem}")
    return value


def writable_directory(path: str | Path, what: str, mode: int = 0o755) -> Path:
    """The directory ``path`` (``what``), made with its parents if missing, once this user
    can write in it; :class:`FileProblem` saying why not."""
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=mode)
    except FileExistsError:
        raise FileProblem(f"{what} {str(path)!r} is a file, not a directory") from None
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise FileProblem(f"{what} {str(path)!r}: cannot make it: {why}") from None
    if not directory.is_dir():
        raise FileProblem(f"{what} {str(path)!r} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise FileProblem(f"{what} {str(path)!r}: this user cannot write in it")
    return directory


def writable_file(path: str | Path, what: str) -> Path:
    """``path`` (``what``) once it is a file this user can write, or can make;
    :class:`FileProblem` saying why not (nothing is written)."""
    target = Path(path)
    if target.is_dir():
        raise FileProblem(f"{what} {str(path)!r} is a directory, not a file")
    parent = target.parent
    if not parent.is_dir():
        raise FileProblem(f"{what} {str(path)!r}: {str(parent)!r} is not a directory")
    if not os.access(target if target.exists() else parent, os.W_OK):
        raise FileProblem(f"{what} {str(path)!r}: this user cannot write it")
    return target
