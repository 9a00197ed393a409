"""The cost of one identity per node: issuing a node's key and certificate, loading the
management side's store of a whole machine's node certificates (each checked against the
site CA), and verifying then decoding one signed answer.

``python -m benchmarks.trust [--nodes 11136] [--issue 50]``
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from celery.security.certificate import Certificate
from celery.security.key import PrivateKey
from cryptography import x509

from pipeline.platform.pki import CertificateAuthority, make_ca
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
            PrivateKey((issued / "node0.key").read_text()),
            Certificate((issued / "node0.crt").read_text()),
        )
        serializer = StrictSerializer(node, trust, "sha256")
        body = [[], {"jobid": 1, "node": "node0", "task_id": "t"}, {"coral2_claim": {}}]
        signed = serializer.serialize(body)
        start = time.perf_counter()
        for _ in range(messages):
            serializer.deserialize(signed)
        verify_us = (time.perf_counter() - start) / messages * 1e6
    return {"issue_s": per_node, "load_s": load_s, "verify_us": verify_us, "nodes": nodes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--issue", type=int, default=50)
    args = parser.parse_args()
    r = bench_trust(args.nodes, args.issue)
    print(f"issue one node's key and certificate: {r['issue_s'] * 1000:.0f} ms")
    print(f"load {r['nodes']:.0f} node certificates, checked against the CA: {r['load_s']:.2f} s")
    print(f"verify and decode one node answer: {r['verify_us']:.0f} µs")


if __name__ == "__main__":
    main()
