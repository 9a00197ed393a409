"""Every argument of every subcommand, found by walking the parser, and one run of the
command line in a child process of its own (forked: it may not hang the test, and what
it prints is its own)."""

from __future__ import annotations

import argparse
import io
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass

from pipeline.cli import build_parser, main
from pipeline.cli.kinds import Number, PathArg

#: The commands that run until stopped: an input they take as good starts them, so
#: they are fed only input that can never be good.
SERVICES = frozenset(
    {"worker", "beat", "watch", "flux-bridge", "node-worker", "exporter", "flower", "demo", "sim"}
)


@dataclass(frozen=True)
class Argument:
    """One argument of one subcommand: the words that name the subcommand, the option
    (or None for a positional), its kind and the other arguments it needs."""

    command: tuple[str, ...]
    option: str | None
    kind: Number | PathArg
    needs: tuple[tuple[str | None, argparse.Action], ...]

    @property
    def name(self) -> str:
        return " ".join((*self.command, self.option or "<positional>"))

    @property
    def service(self) -> bool:
        return self.command[0] in SERVICES


def _leaves(
    parser: argparse.ArgumentParser, words: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield words, parser
    for action in subparsers:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*words, name))


def _option(action: argparse.Action) -> str | None:
    return action.option_strings[-1] if action.option_strings else None


def arguments() -> list[Argument]:
    """Every number and path argument of every subcommand (the global ``--config``
    with ``deadletters``)."""
    parser = build_parser(every=True)
    found = [
        Argument(("deadletters",), "--config", a.type, ())
        for a in parser._actions
        if isinstance(a.type, PathArg)
    ]
    for words, leaf in _leaves(parser, ()):
        needed = tuple(
            (_option(a), a)
            for a in leaf._actions
            if a.required
            or (not a.option_strings and a.nargs not in ("?", "*", argparse.REMAINDER))
        )
        for action in leaf._actions:
            if isinstance(action.type, Number | PathArg):
                others = tuple((o, a) for o, a in needed if a is not action)
                found.append(Argument(words, _option(action), action.type, others))
    return found


def commands() -> list[tuple[str, ...]]:
    """The words of every subcommand a user can run (the leaves of the parser)."""
    return [words for words, _ in _leaves(build_parser(every=True), ()) if words]


def raw_number_options() -> list[str]:
    """The arguments that take a number some other way than a :class:`Number`."""
    parser = build_parser(every=True)
    return [
        " ".join((*words, _option(a) or a.dest))
        for words, leaf in _leaves(parser, ())
        for a in leaf._actions
        if a.type in (int, float)
    ]


@dataclass(frozen=True)
class Outcome:
    status: int | None  # None: still running at the deadline (killed)
    stderr: str


def run(
    argv: list[str], env: dict[str, str], timeout_s: float = 15.0, stdout: str = os.devnull
) -> Outcome:
    """``coral2-pipeline ARGV`` in a forked child with ``env`` added, its stdin empty and
    its stdout ``stdout`` (dropped); its exit status (None: killed at ``timeout_s``) and
    stderr."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            os.dup2(writer, 2)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(os.open(stdout, os.O_WRONLY), 1)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r"))
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w"))
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
            os.environ.update(env)
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stderr.flush()
            finally:
                os._exit(code)
    os.close(writer)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    status: int | None = None
    while True:
        ready, _, _ = select.select([reader], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        chunk = os.read(reader, 65536)
        if not chunk:
            status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            break
        chunks.append(chunk)
    os.close(reader)
    outcome = Outcome(status, b"".join(chunks).decode(errors="replace"))
    RUNS.append(outcome)
    return outcome


#: Every outcome :func:`run` gave in this process since the last report took them
#: (``tests/cli/conftest.py`` counts them by the test that ran them: the generator's
#: classes, with its hangs and tracebacks, in the session's summary).
RUNS: list[Outcome] = []
