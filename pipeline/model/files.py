"""Reading a file a command or a setting names: one way, for every one of them.

The only file I/O of the pure rooms: a named file read whole into text, bounded in size,
with every way it can fail — missing, a directory, unreadable, too large, not UTF-8 —
said in one line naming the file and what it was meant to be (:class:`FileProblem`, a
:class:`~pipeline.errors.ConfigError`: the commands exit 3 for it).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import ConfigError

#: The largest file read whole (a whole machine's rabbitmapping is a few MiB).
MAX_BYTES = 64 * 1024 * 1024


class FileProblem(ConfigError):
    """Raised when a named file cannot be read as text; the message is one line."""


def read_text(path: str | Path, what: str, max_bytes: int = MAX_BYTES) -> str:
    """The text of ``path``, which holds ``what``; :class:`FileProblem` saying why not."""
    shown = str(path)
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except IsADirectoryError:
        raise FileProblem(f"{what} {shown!r} is a directory, not a file") from None
    except OSError as exc:
        raise FileProblem(f"cannot read {what} {shown!r}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise FileProblem(f"{what} {shown!r} is larger than {max_bytes:,} bytes") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            f"{what} {shown!r} is not UTF-8 text (byte {exc.start}: {data[exc.start]:#04x})"
        ) from None
