"""Each figure ``make bench`` prints, against the one ``docs/performance.md`` states.

The figures compared are named in the table of the docs' section "What `make bench`
compares": one row per figure, ``| key | stated | better |`` (``lower`` or ``higher``).
A figure more than :data:`WORSE_BY` worse than stated is a regression and printed so;
one the docs do not state is printed as such, so that a new figure cannot go unseen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: How much worse than stated a figure may be before it is called a regression.
WORSE_BY = 0.30
#: Where the stated figures are.
DOCS = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
#: The section holding them.
SECTION = "## What `make bench` compares"
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([0-9][0-9.,]*)\s*\|\s*(lower|higher)\s*\|")


@dataclass(frozen=True)
class Stated:
    """A figure as the docs state it."""

    value: float
    lower_is_better: bool


@dataclass(frozen=True)
class Verdict:
    """One figure measured against its stated value (None: not stated)."""

    key: str
    measured: float
    stated: Stated | None

    @property
    def worse_by(self) -> float | None:
        """How much worse than stated (negative: better); None when not stated."""
        if self.stated is None or self.stated.value == 0:
            return None
        change = (self.measured - self.stated.value) / self.stated.value
        return change if self.stated.lower_is_better else -change

    @property
    def regression(self) -> bool:
        worse = self.worse_by
        return worse is not None and worse > WORSE_BY


def stated_figures(text: str) -> dict[str, Stated]:
    """The figures of the docs' comparison table."""
    _, found, rest = text.partition(SECTION)
    if not found:
        return {}
    body = rest.split("\n## ", 1)[0]
    out: dict[str, Stated] = {}
    for line in body.splitlines():
        match = _ROW.match(line)
        if match:
            key, value, better = match.groups()
            out[key] = Stated(float(value.replace(",", "")), better == "lower")
    return out


def compare(measured: dict[str, float], stated: dict[str, Stated]) -> list[Verdict]:
    """Each measured figure against its stated value, in the order measured."""
    return [Verdict(key, value, stated.get(key)) for key, value in measured.items()]


def lines(verdicts: list[Verdict]) -> list[str]:
    """One line per figure: regressions first, each saying by how much."""
    out: list[str] = []
    for verdict in sorted(verdicts, key=lambda v: (not v.regression, v.key)):
        stated = verdict.stated
        if stated is None:
            out.append(f"NOT STATED  {verdict.key} = {verdict.measured:g} (docs/performance.md)")
            continue
        worse = verdict.worse_by or 0.0
        word = "REGRESSION" if verdict.regression else "ok"
        out.append(
            f"{word:<11} {verdict.key} = {verdict.measured:g} against {stated.value:g} stated "
            f"({worse:+.0%} {'worse' if worse > 0 else 'better'})"
        )
    return out


def report(measured: dict[str, float], docs: Path = DOCS) -> list[str]:
    """:func:`lines` for ``measured`` against ``docs``."""
    return lines(compare(measured, stated_figures(docs.read_text())))
