"""`coral2-pipeline exporter --web.config.file` takes the web configuration of Prometheus's
exporter toolkit: with `tls_server_config` it serves HTTPS alone, with a client
certificate required when asked; with `basic_auth_users` (bcrypt hashes) a scrape with no
or a wrong password is 401 and the right one is served. A file it cannot carry out
whole — a key it does not know, a hash that is no bcrypt, a certificate it cannot read —
is one line, exit status 3, and no server."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import bcrypt
import httpx
import pytest
from coral2_sim.children import die_with_parent
from coral2_sim.redis_server import RedisServer, free_port
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.http_service import wait_until_served

PASSWORD = "scrape-me"


Issued = tuple[ec.EllipticCurvePrivateKey, x509.Certificate]
#: The start of a web configuration naming the exporter's certificate and key.
TLS = "tls_server_config:\n  cert_file: exporter.crt\n  key_file: exporter.key\n"


def issue(directory: Path, name: str, *, signer: Issued | None = None) -> Issued:
    """A certificate for 127.0.0.1 named ``name`` (self-signed, a CA, without ``signer``),
    written as ``<name>.crt`` and ``<name>.key`` in ``directory``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_key, issuer = signer if signer else (key, None)
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=signer is None, path_length=None), critical=True)
        .sign(issuer_key, hashes.SHA256())
    )
    (directory / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / f"{name}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return key, cert


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path) as server:
        yield server


Start = Callable[[str], tuple[subprocess.Popen[bytes], int]]


@pytest.fixture
def start(tmp_path: Path, redis_server: RedisServer) -> Iterator[Start]:
    """Starts the exporter with a web configuration of the given text."""
    started: list[subprocess.Popen[bytes]] = []

    def run(web: str) -> tuple[subprocess.Popen[bytes], int]:
        (tmp_path / "web.yml").write_text(web)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
        env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_server.url
        port = free_port()
        argv = [sys.executable, "-m", "pipeline.cli", "exporter", "--port", str(port)]
        argv += ["--web.config.file", str(tmp_path / "web.yml")]
        with (tmp_path / "exporter.log").open("wb") as log:
            proc = subprocess.Popen(die_with_parent(argv), env=env, stdout=log, stderr=log)
        started.append(proc)
        return proc, port

    yield run
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


def test_tls_and_basic_auth_serve_only_the_named_user_over_https(
    tmp_path: Path, start: Start
) -> None:
    issue(tmp_path, "exporter")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    proc, port = start(TLS + f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    url = f"https://127.0.0.1:{port}/metrics"
    trust = ssl.create_default_context(cafile=str(tmp_path / "exporter.crt"))
    wait_until_served(url, proc, tmp_path / "exporter.log", verify=trust)
    assert httpx.get(url, verify=trust, timeout=30).status_code == 401
    wrong = httpx.get(url, verify=trust, auth=("prometheus", "nope"), timeout=30)
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Basic")
    assert httpx.get(url, verify=trust, auth=("nobody", PASSWORD), timeout=30).status_code == 401
    right = httpx.get(url, verify=trust, auth=("prometheus", PASSWORD), timeout=30)
    assert right.status_code == 200 and "coral2_up" in right.text
    with pytest.raises(httpx.HTTPError):  # HTTPS alone: plain HTTP is not served
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)


def test_a_required_client_certificate_is_checked_against_its_ca(
    tmp_path: Path, start: Start
) -> None:
    issue(tmp_path, "exporter")
    ca = issue(tmp_path, "prometheus-ca")
    issue(tmp_path, "prometheus", signer=ca)
    issue(tmp_path, "stranger")  # signed by no CA the exporter trusts
    proc, port = start(
        TLS + "  client_auth_type: RequireAndVerifyClientCert\n"
        "  client_ca_file: prometheus-ca.crt\n"
    )
    url = f"https://127.0.0.1:{port}/metrics"

    def client(name: str | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(tmp_path / "exporter.crt"))
        if name:
            context.load_cert_chain(tmp_path / f"{name}.crt", tmp_path / f"{name}.key")
        return context

    wait_until_served(url, proc, tmp_path / "exporter.log", verify=client("prometheus"))
    assert httpx.get(url, verify=client("prometheus"), timeout=30).status_code == 200
    for name in (None, "stranger"):
        with pytest.raises(httpx.HTTPError):
            httpx.get(url, verify=client(name), timeout=10)


@pytest.mark.parametrize(
    ("web", "said"),
    [
        (TLS + "  cipher: x\n", "tls_server_config.cipher: unknown key"),
        ("basic_auth_users:\n  prometheus: plaintext\n", "is not a bcrypt hash"),
        (TLS, "tls_server_config: [Errno 2] No such file or directory"),
        (TLS + "  min_version: TLS9\n", "min_version"),
        ("tls_server_config: [\n", "is not valid YAML"),
        ("http_server_config:\n  http2: true\n", "http_server_config"),
    ],
    ids=["unknown key", "not bcrypt", "no certificate", "bad version", "not yaml", "http2"],
)  # fmt: skip
def test_a_file_it_cannot_carry_out_whole_is_one_line_and_no_server(
    start: Start, tmp_path: Path, web: str, said: str
) -> None:
    proc, _ = start(web)
    assert proc.wait(timeout=60) == 3  # a file it reads that cannot work, as every command
    lines = (tmp_path / "exporter.log").read_text().strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "Traceback" not in lines[0], lines
