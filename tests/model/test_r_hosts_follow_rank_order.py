"""RFC 20: nodelist hosts are assigned to R_lite ranks in ascending order, whatever the ranks."""

from pipeline.model.resource_set import ResourceSet


def test_a_job_r_with_ranks_not_starting_at_zero_maps_hosts_by_position() -> None:
    r = ResourceSet.parse(
        {
            "version": 1,
            "execution": {
                "R_lite": [{"rank": "17,40-41", "children": {"core": "0-3"}}],
                "nodelist": ["compute[18,41-42]"],
            },
        }
    )
    assert r.unique_hosts() == ["compute18", "compute41", "compute42"]
    assert r.hostname(40) == "compute41"
    assert r.rank_of("compute42") == 41
    assert r.cores("compute18") == (0, 1, 2, 3)
