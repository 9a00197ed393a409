"""Message-signing keys for the demo: made at start, gone with its work directory.

A site makes its own with its PKI and ``coral2-pipeline node-cert``
(docs/security.md). The demo does the same with ``cryptography``: a site CA,
the management side's pair (which signs every task the pipeline sends), and
one pair per compute node, issued by the CA with the node's hostname as its
name (each signs only that node's answers). The management side trusts its
own certificate for every task and each node's certificate for that node's
answers (``security_node_cert_store``, checked against the CA); a node
worker trusts the management side alone, so it runs nothing a node (or
anyone without the management key) signed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pipeline.platform.pki import CertificateAuthority, make_ca
from pipeline.platform.signing import HOST

#: The management side's certificate's name (its files: ``<name>.key``, ``<name>.crt``).
MANAGEMENT = "coral2-pipeline management"
MANAGEMENT_KEY, MANAGEMENT_CERT = f"{MANAGEMENT}.key", f"{MANAGEMENT}.crt"
CA_CERT = "ca.crt"


@dataclass(frozen=True)
class Signer:
    """One key pair (or, for a node worker serving several nodes, one per node: the paths
    hold ``{host}``) and the certificate store its owner trusts."""

    key: Path | str
    certificate: Path | str
    store: Path
    answers: Path | None = None  # node certificates, each trusted for its node's answers
    ca: Path | None = None  # the site CA that issued them

    def env(self) -> dict[str, str]:
        """The settings that make a process sign with this key and trust these stores."""
        env = {
            "CORAL2_PIPELINE_PIPELINE__SECURITY_KEY": str(self.key),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERTIFICATE": str(self.certificate),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERT_STORE": str(self.store),
        }
        if self.answers is not None:
            env["CORAL2_PIPELINE_PIPELINE__SECURITY_NODE_CERT_STORE"] = str(self.answers)
        if self.ca is not None:
            env["CORAL2_PIPELINE_PIPELINE__SITE_CA_CERTIFICATE"] = str(self.ca)
        return env

    def of(self, host: str) -> Signer:
        """This node signer narrowed to ``host``'s own key (a worker for that node alone)."""
        return Signer(
            str(self.key).replace(HOST, host),
            str(self.certificate).replace(HOST, host),
            self.store,
            self.answers,
            self.ca,
        )


def key_pair(directory: Path, name: str) -> tuple[Path, Path]:
    """Write ``<name>.key`` (mode 0600) and ``<name>.crt`` into ``directory``, issued by a
    CA of their own (one nobody trusts unless told to: a rogue's key)."""
    ca_dir = directory / f"{name}-ca"
    ca_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca = CertificateAuthority(*make_ca(ca_dir, f"{name} CA"))
    return ca.issue(directory, name)


def cached_signers(directory: Path, hosts: Iterable[str], cache: Path) -> tuple[Signer, Signer]:
    """:func:`demo_signers` for ``hosts``, copied into ``directory`` from ``cache``, where
    they are made the first time: a whole machine's node keys take minutes of a core to
    make (the benchmarks' runs share them; a site never does this)."""
    hosts = list(hosts)
    digest = hashlib.sha256("\n".join(hosts).encode()).hexdigest()[:16]
    kept = cache / f"keys-{len(hosts)}-{digest}"
    if not kept.exists():
        making = cache / f"{kept.name}.{os.getpid()}"  # whole, or not there at all
        shutil.rmtree(making, ignore_errors=True)
        demo_signers(making, hosts)
        try:
            making.rename(kept)
        except OSError:  # another run made them first
            shutil.rmtree(making, ignore_errors=True)
    shutil.copytree(kept, directory, dirs_exist_ok=True)
    return _signers(directory)


def demo_signers(directory: Path, hosts: Iterable[str] = ("compute01",)) -> tuple[Signer, Signer]:
    """The management side's signer and the node workers' (see the module docstring):
    one key per node of ``hosts``."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_key, ca_cert = make_ca(directory)
    ca = CertificateAuthority(ca_key, ca_cert)
    # the management key signs every task message: EC signs fastest
    _mgmt_key, mgmt_cert = ca.issue(directory, MANAGEMENT, key_type="ec")
    nodes = directory / "nodes"
    nodes.mkdir(exist_ok=True, mode=0o700)
    mgmt_store, node_store = directory / "management-trusts", directory / "node-trusts"
    answers = directory / "node-answers-trusts"
    for store in (mgmt_store, node_store, answers):
        store.mkdir(exist_ok=True)
    for store in (mgmt_store, node_store):
        shutil.copy(mgmt_cert, store / mgmt_cert.name)
    for host in hosts:
        _key, cert = ca.issue(nodes, host)
        shutil.copy(cert, answers / cert.name)
    return _signers(directory)


def _signers(directory: Path) -> tuple[Signer, Signer]:
    """The signers of the keys :func:`demo_signers` made in ``directory``."""
    nodes = directory / "nodes"
    management = Signer(
        directory / MANAGEMENT_KEY,
        directory / MANAGEMENT_CERT,
        directory / "management-trusts",
        directory / "node-answers-trusts",
        directory / CA_CERT,
    )
    node = Signer(str(nodes / f"{HOST}.key"), str(nodes / f"{HOST}.crt"), directory / "node-trusts")
    return management, node
