"""The cost of one identity per node: issuing a node's key and certificate, loading the
management side's store of a whole machine's node certificates (each checked against the
site CA), and verifying then decoding one signed answer; and what signing a whole
machine's node messages costs the management side with an RSA key and with an EC key.

``python -m benchmarks.trust [--nodes 11136] [--issue 50]``
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from cryptography import x509

from pipeline.platform.pki import CertificateAuthority, make_ca
from pipeline.platform.signer_keys import SigningKey, VerifyingCertificate
from pipeline.platform.signing import MANAGEMENT, NODE, StrictSerializer, TrustStore

#: El Capitan's compute nodes.
NODES = 11_136


def bench_trust(nodes: int = NODES, issue: int = 50, messages: int = 2000) -> dict[str, float]:
    """Seconds to issue one node's pair, to load ``nodes`` certificates, and to verify and
    decode one answer (µs)."""
    with tempfile.TemporaryDirectory(prefix="coral2-trust-") as name:
        work = Path(name)
        ca_key, ca_cert = make_ca(work)
        ca = CertificateAuthority(ca_key, ca_cert)
        issued = work / "issued"
        issued.mkdir()
        start = time.perf_counter()
        for i in range(issue):
            ca.issue(issued, f"node{i}")
        per_node = (time.perf_counter() - start) / issue
        store = work / "store"
        store.mkdir()
        certs = sorted(issued.glob("*.crt"))
        for i in range(nodes):  # the same few certificates under many names: same cost
            shutil.copy(certs[i % len(certs)], store / f"{i}.crt")
        _key, mgmt_cert = ca.issue(work, "management")
        start = time.perf_counter()
        trust = TrustStore()
        trust.add_directory(str(store), NODE, x509.load_pem_x509_certificate(ca_cert.read_bytes()))
        load_s = time.perf_counter() - start
        trust.add_directory(str(mgmt_cert), MANAGEMENT)
        node = (
            SigningKey((issued / "node0.key").read_text()),
            VerifyingCertificate((issued / "node0.crt").read_text()),
        )
        serializer = StrictSerializer(node, trust, "sha256")
        body = [[], {"jobid": 1, "node": "node0", "task_id": "t"}, {"coral2_claim": {}}]
        signed = serializer.serialize(body)
        start = time.perf_counter()
        for _ in range(messages):
            serializer.deserialize(signed)
        verify_us = (time.perf_counter() - start) / messages * 1e6
        sign_us = {kind: _sign_us(ca, work, kind, trust, messages) for kind in ("rsa", "ec")}
    return {
        "issue_s": per_node,
        "load_s": load_s,
        "verify_us": verify_us,
        "nodes": nodes,
        "sign_rsa_us": sign_us["rsa"],
        "sign_ec_us": sign_us["ec"],
    }


def _sign_us(
    ca: CertificateAuthority, work: Path, kind: str, trust: TrustStore, messages: int
) -> float:
    """µs to sign one node message with a management key of ``kind``."""
    key, cert = ca.issue(work, f"management-{kind}", key_type=kind)
    pair = (SigningKey(key.read_text()), VerifyingCertificate(cert.read_text()))
    serializer = StrictSerializer(pair, trust, "sha256")
    body = [[], {"jobid": 1, "hostname": "node0", "vnis": [1024]}, {"coral2_claim": {}}]
    start = time.perf_counter()
    for _ in range(messages):
        serializer.serialize(body)
    return (time.perf_counter() - start) / messages * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--issue", type=int, default=50)
    args = parser.parse_args()
    r = bench_trust(args.nodes, args.issue)
    print(f"issue one node's key and certificate: {r['issue_s'] * 1000:.0f} ms")
    print(f"load {r['nodes']:.0f} node certificates, checked against the CA: {r['load_s']:.2f} s")
    print(f"verify and decode one node answer: {r['verify_us']:.0f} µs")
    for kind in ("rsa", "ec"):
        us = r[f"sign_{kind}_us"]
        print(
            f"sign one node message, {kind.upper()} management key: {us:.0f} µs "
            f"({us * r['nodes'] / 1e6:.2f} s for {r['nodes']:.0f} nodes)"
        )


if __name__ == "__main__":
    main()
