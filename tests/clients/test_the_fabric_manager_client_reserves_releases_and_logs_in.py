"""The fabric manager client against the simulated fabric manager over HTTP: a reservation
is looked up, made on a 404 and found again by a rerun; steps and reservations are
released (a gone one is done); OAuth logs in again once on 401; basic auth works; a down,
slow or failing fabric manager is FabricManagerUnavailable, a refusal FabricManagerError."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from coral2_sim.fabric import FabricManagerSim

from pipeline.clients.fabric import FabricManager
from pipeline.errors import ConfigError, FabricManagerError, FabricManagerUnavailable
from pipeline.settings.hwcoll import HwcollSettings


@pytest.fixture
def fm() -> Iterator[FabricManagerSim]:
    with FabricManagerSim() as sim:
        yield sim


def credentials(tmp_path: Path, fm: FabricManagerSim, mode: int = 0o600) -> str:
    fm.write_credentials(tmp_path)
    for path in tmp_path.iterdir():
        path.chmod(mode)
    return str(tmp_path)


@pytest.fixture
def client(tmp_path: Path, fm: FabricManagerSim) -> Iterator[FabricManager]:
    settings = HwcollSettings(url=fm.url, auth_dir=credentials(tmp_path, fm), request_timeout=0.5)
    client = FabricManager(settings)
    yield client
    client.close()


def test_a_reservation_is_made_once_and_found_again(
    client: FabricManager, fm: FabricManagerSim
) -> None:
    token = client.reserve("elcap-1", 23)
    assert client.reserve("elcap-1", 23) == token
    assert fm.reservations() == {"elcap-1": 23}
    assert fm.requests["POST"] == 2  # the token fetch and one create
    assert client.reservations() == ["elcap-1"]


def test_releasing_a_step_then_the_reservation_leaves_nothing(
    client: FabricManager, fm: FabricManagerSim
) -> None:
    client.reserve("elcap-2", 4)
    client.release_step("elcap-2", "2")
    client.release("elcap-2")
    client.release("elcap-2")  # gone already: done
    client.release_step("elcap-2", "2")
    assert fm.reservations() == {}


def test_an_expired_token_is_fetched_again_once(
    client: FabricManager, fm: FabricManagerSim
) -> None:
    client.reserve("elcap-3", 4)
    fm.expire_tokens()
    assert client.exists("elcap-3")
    fm.fault(unauthorized=1)
    assert client.exists("elcap-3")


def test_basic_auth_logs_in_as_cxi(tmp_path: Path, fm: FabricManagerSim) -> None:
    settings = HwcollSettings(url=fm.url, auth="basic", auth_dir=credentials(tmp_path, fm))
    client = FabricManager(settings)
    assert client.reserve("elcap-4", 2)
    client.close()


@pytest.mark.parametrize("fault", [{"down": True}, {"slow_s": 1.0}, {"errors": 5}])
def test_a_down_slow_or_failing_fabric_manager_is_unavailable(
    client: FabricManager, fm: FabricManagerSim, fault: dict[str, object]
) -> None:
    client.reserve("elcap-5", 2)  # logged in
    fm.fault(**fault)  # type: ignore[arg-type]
    with pytest.raises(FabricManagerUnavailable):
        client.reserve("elcap-6", 2)
    fm.fault(down=False, slow_s=0.0, errors=0)
    assert client.reserve("elcap-6", 2)


def test_refused_credentials_are_an_error_that_names_no_secret(
    tmp_path: Path, fm: FabricManagerSim
) -> None:
    auth = credentials(tmp_path, fm)
    (tmp_path / "client-secret").write_text("wrong\n")
    client = FabricManager(HwcollSettings(url=fm.url, auth_dir=auth))
    with pytest.raises(FabricManagerUnavailable, match=r"token endpoint .* answered 401") as err:
        client.reserve("elcap-7", 2)
    assert fm.client_secret not in str(err.value)
    client.close()


def test_a_secret_others_can_read_is_refused_with_the_chmod_that_fixes_it(
    tmp_path: Path, fm: FabricManagerSim
) -> None:
    auth = credentials(tmp_path, fm, mode=0o644)
    client = FabricManager(HwcollSettings(url=fm.url, auth_dir=auth))
    with pytest.raises(ConfigError, match="chmod 600"):
        client.reserve("elcap-8", 2)
    client.close()


def test_a_request_the_fabric_manager_refuses_is_an_error(client: FabricManager) -> None:
    with pytest.raises(FabricManagerError, match="refused"):
        client._request("PUT", "/fabric/collectives/jobs/")
