"""Hardware collectives' pure rules: HPE's addresses-per-job formula (23 for El Capitan),
which jobs are eligible, the reservation's name at the fabric manager, and the
environment libfabric reads; the token never shows in a redacted view."""

from __future__ import annotations

import pytest

from pipeline.model.hwcoll import (
    REDACTED,
    Reservation,
    addresses_per_job,
    eligible,
    environment,
    fm_job_id,
    jobid_of,
    links,
)


def test_el_capitan_gets_23_addresses_per_job_as_the_seed_computes() -> None:
    assert addresses_per_job(4086, 11136, 64) == 23
    assert addresses_per_job(4086, 11136, 64, jobs_sharing=2) == 11  # rounded down


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_a_non_positive_input_is_a_clear_value_error(bad: object) -> None:
    with pytest.raises(ValueError, match="min_job_nodes must be a positive integer"):
        addresses_per_job(4086, 11136, bad)  # type: ignore[arg-type]


def test_with_a_minimum_size_big_jobs_are_eligible_and_small_ones_only_if_they_ask() -> None:
    assert eligible(64, 64, asked=False)
    assert not eligible(63, 64, asked=False)
    assert eligible(2, 64, asked=True)


def test_without_a_minimum_only_jobs_that_ask_are_eligible() -> None:
    assert not eligible(10_000, None, asked=False)
    assert eligible(1, None, asked=True)


def test_reservation_ids_carry_the_cluster_and_other_clusters_are_not_ours() -> None:
    assert fm_job_id("elcap", 4242) == "elcap-4242"
    assert jobid_of("elcap", "elcap-4242") == 4242
    assert jobid_of("elcap", "tuolumne-4242") is None
    assert jobid_of("elcap", "elcap-42x") is None
    assert jobid_of("elcap", "elcap-٤٢") is None  # Unicode digits are not a jobid


def test_the_environment_is_what_libfabric_reads() -> None:
    kept = Reservation(fm_job_id="elcap-7", mcast_limit=23, token="s3cret", step="7")
    assert environment(kept, "https://fm/apis/fm/", 64) == {
        "FI_CXI_HWCOLL_MIN_NODES": "64",
        "FI_CXI_HWCOLL_ADDRS_PER_JOB": "23",
        "FI_CXI_COLL_JOB_ID": "elcap-7",
        "FI_CXI_COLL_MCAST_TOKEN": "s3cret",
        "FI_CXI_COLL_FABRIC_MGR_URL": "https://fm/apis/fm/fabric/collectives/multicasts",
        "FI_CXI_COLL_JOB_STEP_ID": "7",
    }


def test_the_token_is_hidden_in_views_and_reprs() -> None:
    kept = Reservation(fm_job_id="elcap-7", mcast_limit=23, token="s3cret", step="7")
    assert kept.redacted()["token"] == REDACTED
    assert "s3cret" not in repr(kept)


def test_a_listing_gives_the_reservation_ids() -> None:
    listing = {"documentLinks": ["/fabric/collectives/jobs/elcap-1", "/elsewhere/x", 5]}
    assert links(listing) == ["elcap-1"]
