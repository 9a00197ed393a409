"""What ``deploy/flux`` ships merges with a site's own Flux configuration: next to the
site's ``[job-manager] plugins`` (``dws-jobtap.so``, ``perilog.so``) and its own per-rank
prolog, which runs every script of its ``prolog.d`` on each node of the job, our
``prolog.d/coral2-pipeline`` holds each job on every node, as the node's own Redis user,
until the pipeline released it: the site's prolog still runs on every node, the job starts
only after both, and ``#DW`` jobs still go through ``dws-jobtap.so``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipeline.clients.flux_site import FluxSite
from tests.flux.conftest import Tier, start_tier

DW = "--setattr=system.dw=#DW jobdw type=xfs capacity=10GiB name=scratch"


@pytest.fixture(scope="module")
def site(flux_site: FluxSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    workdir = tmp_path_factory.mktemp("site")
    prolog_d = workdir / "prolog.d"
    prolog_d.mkdir()
    own = prolog_d / "00-site"
    own.write_text(f'#!/bin/sh\necho "$FLUX_JOB_ID" >>{workdir}/site-prolog-ran\n')
    own.chmod(0o755)
    # the management side writes each node's verdict for its per-rank prolog
    node_prologs = {"CORAL2_PIPELINE_PIPELINE__NODE_PROLOGS": "true"}
    started = start_tier(flux_site, workdir, node_prologs, site_prolog_d=prolog_d)
    yield started
    started.flux.stop()
    started.system.stop()


def test_the_sites_prolog_and_ours_both_run_on_every_node(site: Tier) -> None:
    jobid = site.submit("-N2", DW, "printenv", "DW_JOB_scratch")
    site.wait_inactive(jobid)
    names = site.names(jobid)
    assert names.index("prolog-finish job-manager.prolog") < names.index("start"), names
    assert names.index("cray-slingshot") < names.index("prolog-finish job-manager.prolog")
    assert "prolog-finish dws-setup" in names
    finish = next(e for e in site.events(jobid) if e["name"] == "finish")
    assert finish["context"]["status"] == 0
    f58 = site.flux.flux("job", "id", "--to=f58", str(jobid)).strip()
    ran = (site.system.workdir / "site-prolog-ran").read_text().split()
    assert ran.count(f58) == 2
    assert site.settled() == []


def test_the_site_config_keeps_its_plugins_and_its_per_rank_prolog(site: Tier) -> None:
    plugins = site.flux.flux("jobtap", "list")
    assert "dws-jobtap.so" in plugins and "perilog.so" in plugins
    prolog = site.flux.flux("config", "get", "job-manager.prolog")
    assert '"per-rank":true' in prolog.replace(" ", "")
