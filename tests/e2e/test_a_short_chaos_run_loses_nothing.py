"""The chaos harness, short: a batch of the demo's jobs while the worker, the node worker,
the watcher and beat are killed and restarted at random (seeded), beat is frozen and
Redis restarts once. Every job ends as its kind says; nothing is lost, delivered twice to
Flux, or left behind. ``make chaos`` runs the long version (1,000 jobs)."""

from __future__ import annotations

from pipeline.sim.chaos import run_chaos


def test_sixty_jobs_under_random_kills_end_as_they_must_and_leave_nothing() -> None:
    report = run_chaos(60, seed=7, every_s=2.0, drain_s=150)
    assert report.kills >= 5, report.faults
    assert report.ok, "\n".join(
        [report.line(), *report.lost, *report.wrong, *report.duplicates, *report.leaks]
    )
