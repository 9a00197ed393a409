"""``coral2-pipeline node-cert HOSTLIST`` issues each node its own key (mode 0600) and a
certificate named after it from the site CA, copied into the node certificate store; the
management side's trust store takes them as that node's, and refuses a certificate that
another CA issued."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from coral2_sim.keys import key_pair
from cryptography import x509

from pipeline.errors import ConfigError
from pipeline.platform.pki import make_ca
from pipeline.platform.signing import NODE, TrustStore

ROOT = Path(__file__).resolve().parents[2]


def node_cert(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "node-cert", *argv],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_each_node_gets_its_own_pair_trusted_for_that_node_alone(tmp_path: Path) -> None:
    ca_key, ca_cert = make_ca(tmp_path)
    out, store = tmp_path / "issued", tmp_path / "node-trusts"
    done = node_cert(
        "compute[1-3]",
        "--out",
        str(out),
        "--ca-key",
        str(ca_key),
        "--ca-cert",
        str(ca_cert),
        "--node-cert-store",
        str(store),
    )
    assert done.returncode == 0, done.stderr
    for host in ("compute1", "compute2", "compute3"):
        assert stat.S_IMODE((out / f"{host}.key").stat().st_mode) == 0o600
    trust = TrustStore()
    trust.add_directory(str(store), NODE, x509.load_pem_x509_certificate(ca_cert.read_bytes()))
    assert trust.names(NODE) == ["compute1", "compute2", "compute3"]


def test_a_certificate_another_ca_issued_is_refused(tmp_path: Path) -> None:
    _ca_key, ca_cert = make_ca(tmp_path)
    store = tmp_path / "node-trusts"
    store.mkdir()
    key_pair(store, "compute9")  # issued by a CA of its own
    (store / "compute9.key").unlink()
    trust = TrustStore()
    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    with pytest.raises(ConfigError, match="not issued by the site CA"):
        trust.add_directory(str(store / "compute9.crt"), NODE, ca)


def test_without_a_ca_it_says_which_keys_to_set(tmp_path: Path) -> None:
    done = node_cert("compute1", "--out", str(tmp_path))
    assert done.returncode != 0
    assert "pipeline.site_ca_key" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_existing_key_is_not_replaced_unless_forced(tmp_path: Path) -> None:
    ca_key, ca_cert = make_ca(tmp_path)
    argv = ["compute1", "--out", str(tmp_path / "o"), "--ca-key", str(ca_key)]
    argv += ["--ca-cert", str(ca_cert)]
    assert node_cert(*argv).returncode == 0
    again = node_cert(*argv)
    assert again.returncode != 0 and "--force" in again.stderr
    assert node_cert(*argv, "--force").returncode == 0
