"""Every subcommand, found by walking the parser (a new one is covered without a case of
its own), asked for its help with standard output on ``/dev/full``, says in one line that
its output could not be written and exits 1 — argparse alone would drop the text and
exit 0."""

from __future__ import annotations

import pytest

from tests.cli.walker import commands, run


@pytest.mark.parametrize("words", commands(), ids=" ".join)
def test_its_help_lost_to_a_full_disk_is_one_line_and_exit_1(words: tuple[str, ...]) -> None:
    outcome = run([*words, "--help"], {}, stdout="/dev/full")
    assert outcome.status == 1, outcome.stderr
    [line] = outcome.stderr.strip().splitlines()
    assert line.endswith("cannot write its output: No space left on device"), line
