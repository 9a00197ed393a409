"""deploy/monitoring.toml, the settings of ``status`` and of the exporter's unit, loads as
it is shipped (its password file where the site puts it), speaks as the ``monitoring``
Redis user, and gives status the node work and the timeouts to check, as the workers'
settings give them; the exporter's unit reads it."""

from __future__ import annotations

from pathlib import Path

from coral2_sim.demo.model import sample_path

from pipeline.platform.nodework import expected_computes
from pipeline.settings import load_settings
from tests.deploy.units import REPO, units

SHIPPED = REPO / "deploy" / "monitoring.toml"


def test_it_loads_as_the_monitoring_user_with_node_work_and_timeouts(tmp_path: Path) -> None:
    password = tmp_path / "monitoring.redis-password"
    password.write_text("a-password\n")
    password.chmod(0o600)
    env = {
        "CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE": str(password),
        "CORAL2_PIPELINE_RABBIT__MAPPING": str(sample_path("sample-rabbitmapping.json")),
    }
    settings = load_settings(str(SHIPPED), env=env)
    assert settings.pipeline.redis_username == "monitoring"
    assert settings.rabbit.setup_timeout > 0 and settings.rabbit.prerun_timeout > 0
    computes, problem = expected_computes(settings)
    assert problem == "" and computes  # the node-worker check has its computes


def test_the_exporters_unit_reads_it() -> None:
    [unit] = [u for u in units() if u.name == "coral2-pipeline-exporter.service"]
    assert "--config /etc/coral2-pipeline/monitoring.toml exporter" in unit.one("ExecStart")
    assert unit.one("User") == "coral2-monitor" and unit.one("Type") == "notify"
