"""The kinds of argument a subcommand takes, one way each, and one line for a bad one.

Every number option is a :class:`Number` (a port, a duration, a count, a fraction),
checked by ``pipeline.model.numbers``; every option naming a file or directory is a
:class:`PathArg`, read through ``pipeline.model.files`` by the command. A test walks
every subcommand of the parser and feeds each such argument bad values of its kind
(``tests/cli/test_every_argument_refuses_bad_input_in_one_line.py``); a raw
``type=int``/``type=float`` fails it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NoReturn

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

from pipeline.model import numbers

#: Exit status of a usage error (argparse's).
EXIT_USAGE = 2


#: A Nagios plugin's UNKNOWN, the usage status of ``status``.
UNKNOWN_STATUS = 3


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage error is one line on stderr, naming the command
    and where its help is, with exit status ``usage_exit`` (2; a Nagios plugin's 3, then
    said on stdout too)."""

    usage_exit: int = EXIT_USAGE

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        """Write ``message`` (a help, a version) — and let a failed write be known, where
        argparse swallows it: a help lost to a full disk is no success."""
        if message:
            (file or sys.stderr).write(message)

    def error(self, message: str) -> NoReturn:
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        print(f"{self.prog}: {text} (see {self.prog} --help)", file=sys.stderr)
        status = self.usage_exit
        if status == UNKNOWN_STATUS:  # a Nagios plugin: NRPE shows stdout alone
            print(f"UNKNOWN: {self.prog}: {text}")
        sys.exit(status)


@dataclass(frozen=True)
class Number:
    """A number option: ``kind`` says which (a port, seconds, a count, a fraction), and
    the check takes it the one way."""

    kind: Literal["port", "seconds", "count", "fraction"]
    check: Callable[[float], float]
    integer: bool

    @property
    def __name__(self) -> str:  # argparse names the type in its errors
        return self.kind

    def __call__(self, text: str) -> float:
        try:
            value: float = int(text) if self.integer else float(text)
        except ValueError:
            whole = "a whole number" if self.integer else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {whole}") from None
        try:
            return self.check(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def port(*, free: bool = False) -> Number:
    """A TCP port: 1-65535 (or 0 too, with ``free``: a free one the system picks)."""

    def check(value: float) -> float:
        return 0 if free and value == 0 else numbers.port(int(value))

    return Number("port", check, integer=True)


def seconds(*, zero: bool = False, most: float = numbers.MAX_SECONDS) -> Number:
    """A finite duration in seconds, more than 0 (or 0 too), at most ``most``."""
    return Number("seconds", lambda v: numbers.seconds(v, zero=zero, most=most), integer=False)


def count(*, least: int = 0, most: int = numbers.MAX_COUNT) -> Number:
    """A whole number in ``least``..``most``."""
    return Number("count", lambda v: numbers.count(int(v), least=least, most=most), integer=True)


def hostname(value: str) -> str:
    """A node's name, through the one hostname check
    (:func:`pipeline.model.hostlist.check_hostname`)."""
    from pipeline.model.hostlist import check_hostname

    try:
        return check_hostname(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def address(value: str) -> str:
    """An address to listen on: an IP address, or a hostname (:func:`hostname`)."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    try:
        return hostname(value)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"not an IP address, and {exc}") from None


def fraction() -> Number:
    """A fraction: 0 to 1."""

    def check(value: float) -> float:
        if not 0 <= value <= 1:  # nan compares false: refused too
            raise ValueError(f"{value} is not a fraction: give 0 to 1")
        return value

    return Number("fraction", check, integer=False)


@dataclass(frozen=True)
class PathArg:
    """An option naming a file to read (``file``), a directory to write in (``dir``), or
    a file to write (``out``); the command reads it through ``pipeline.model.files``."""

    kind: Literal["file", "dir", "out"]
    #: whether ``-`` names standard input
    stdin: bool = False

    @property
    def __name__(self) -> str:
        return self.kind

    def __call__(self, text: str) -> str:
        if not text or "\0" in text:
            raise argparse.ArgumentTypeError(f"{text!r} is not a path")
        return text


FILE = PathArg("file")
FILE_OR_STDIN = PathArg("file", stdin=True)
DIR = PathArg("dir")
OUT = PathArg("out")
