"""The demo runs on the bundled sample cluster and every job ends as expected."""

from __future__ import annotations

import io

from coral2_sim.demo.model import SAMPLE_JOBS, run_demo
from rich.console import Console


def test_the_demo_ends_with_every_sample_job_as_expected() -> None:
    buffer = io.StringIO()
    status = run_demo(console=Console(file=buffer, width=200), lifecycle=False)
    text = buffer.getvalue()
    accepted = sum(job.expect == "accepted" for job in SAMPLE_JOBS)
    assert status == 0
    assert f"{len(SAMPLE_JOBS)} jobs, {accepted} accepted" in text
    assert "0 unexpected outcomes" in text
