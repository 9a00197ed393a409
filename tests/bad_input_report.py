"""The bad-input generator's report: the session's summary names each class of input it
fed the commands (``tests/cli/conftest.py`` tags each test's report), how many cases,
how many hung and how many printed a traceback — one line, in the controller with
pytest-xdist too (the reports carry the counts)."""

from __future__ import annotations

from collections import defaultdict

import pytest

COUNTS: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0, 0])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == "bad-input":
            kind, cases, hangs, tracebacks = value
            for index, count in enumerate((cases, hangs, tracebacks)):
                COUNTS[kind][index] += count


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not COUNTS:
        return
    classes = ", ".join(f"{kind} {c[0]}" for kind, c in sorted(COUNTS.items()))
    hangs = sum(c[1] for c in COUNTS.values())
    tracebacks = sum(c[2] for c in COUNTS.values())
    terminalreporter.write_line(
        f"bad-input generator: {classes} cases; {hangs} hangs, {tracebacks} tracebacks"
    )
