"""Helpers shared by the subcommands: settings, input files, mapping lookup."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import RabbitMappingError
from pipeline.model.files import load
from pipeline.settings import Settings, load_settings

if TYPE_CHECKING:  # loaded by the commands that read a mapping, not by every command
    from pipeline.model.rabbitmap import RabbitMapping


class CommandError(Exception):
    """Raised when a command cannot go on; its text is printed as the one error line."""


class UsageError(CommandError):
    """Raised for bad usage argparse cannot see (an option passed through to another
    program); exit status 2, as argparse's."""


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """The ``-v``/``-vv`` option of the long-running commands."""
    parser.add_argument("-v", "--verbose", action="count", default=0, help="-v info, -vv debug")


def setup_logging(verbose: int) -> str:
    """Log to stderr at WARNING, INFO (-v) or DEBUG (-vv: our own loggers, the libraries'
    at INFO); return the level's name."""
    level = ("WARNING", "INFO", "DEBUG")[min(verbose, 2)]
    root = "INFO" if level == "DEBUG" else level
    logging.basicConfig(level=root, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("coral2_pipeline").setLevel(level)
    return level


def settings_of(args: argparse.Namespace) -> Settings:
    """Load the settings named by ``--config`` (or the environment)."""
    return load_settings(getattr(args, "config", None))


#: The most bytes of JSON a command reads (``pipeline.limits.max_payload_bytes``'s default).
MAX_JSON_BYTES = 16 * 1024 * 1024


def read_json(path: str, what: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Read JSON from ``path`` (``-`` = stdin), naming ``what`` in errors
    (``pipeline.model.files``: bounded in size and depth, UTF-8)."""
    return load(path, what, "json", max_bytes=max_bytes)


def load_mapping(path: str) -> RabbitMapping:
    """Load a rabbitmapping with flux getrabbit's messages for missing and bad files."""
    from pipeline.model.rabbitmap import RabbitMapping

    if not Path(path).exists():
        raise CommandError(
            f"Could not find file '{path}' specified under 'rabbit.mapping' config key, "
            "Flux may be misconfigured"
        )
    try:
        return RabbitMapping.load(path)
    except RabbitMappingError as exc:
        raise CommandError(str(exc)) from exc


def printable(value: object) -> str:
    """``value`` as text safe for a terminal: every control and format character (ESC,
    CR, BEL, bidi overrides, ...) written as its escape (``\\x1b``), so a message any
    queue writer made cannot move the cursor, retitle the window or hide a line."""
    text = str(value)
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable() or char == " ":
            out.append(char)
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}")
    return "".join(out)
