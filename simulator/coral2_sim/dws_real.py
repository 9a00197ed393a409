"""The real DWS and nnf-sos, on a real Kubernetes API server, on loopback: the real-DWS
tier's world (``tests/dws_real``).

Nothing here is built or copied from those projects: ``make dws-real`` builds
``kube-apiserver`` and ``etcd`` from the Go modules ``testenv/go.mod`` pins, and the DWS
and nnf-sos managers are built beside them from their public source (the Go module proxy
serves neither; docs/testing.md, "The real DWS stack"). :mod:`coral2_sim.dws_real_found`
finds those binaries; this module reads the CRDs, webhook manifest, ruleset and storage
profile of the same sources, and starts, as their own test suites and kind environments do:

* etcd, and kube-apiserver with token authentication, TLS and the RBAC authorizer (the
  tokens and certificate of :func:`coral2_sim.kube.identities.with_identities`);
* the DWS and nnf CRDs (and lustre-fs-operator's LustreFileSystem, and a schemaless
  stand-in for kubeflow's MPIJob, which nnf-sos deletes with every Workflow), nnf's ruleset in
  ``default`` and a default NnfStorageProfile in ``nnf-system``;
* ``dws --mode=webhook`` behind the mutating and validating Workflow webhooks, pointed at
  ``https://127.0.0.1:9443`` (controller-runtime's port: one stack a machine at a time)
  with a certificate made at start; nnf-sos's own webhooks stay off
  (``ENABLE_WEBHOOKS=false``): what they check, the pipeline checks first or nnf's
  controllers check again;
* ``dws --mode=controller`` and ``nnf-sos --controller=storage``;
* for each rabbit, its Node (Ready), the Pod its node manager looks itself up by, its
  namespace and its computes', and ``nnf-sos --controller=node --mock`` with
  ``ENVIRONMENT=kind`` (mock drives, file systems made as directories under the work
  directory), ``RABBIT_NODE=0`` as nnf-deploy runs it;
* the SystemConfiguration of the rabbitmapping, from which DWS makes each Storage; the
  pipeline's ServiceAccount with the RBAC ``deploy/`` ships.

In kind mode DWS's ClientMount reconciler marks ClientMounts mounted in the namespaces of
computes named ``compute*``, as the computes' clientmount daemons would.
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from coral2_sim.children import die_with_parent
from coral2_sim.dws_real_found import PINS, NotBuilt, RealDws, describe
from coral2_sim.kube.identities import KubeEndpoint, _self_signed, rbac_manifest, with_identities
from coral2_sim.redis_server import free_port
from pipeline.errors import ConfigError
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.platform.pki import write_private

#: controller-runtime's webhook port, which DWS's manager does not let one change.
WEBHOOK_PORT = 9443
#: kube-apiserver's audit log, under the stack's work directory: each request's user and
#: answer, from which :meth:`RealDwsStack.refused` reads what RBAC refused.
AUDIT_LOG = "audit.log"
#: How long the stack may take to come up (s).
START_S = 180.0


#: kubeflow's MPIJob kind, without its schema: what nnf-sos lists and deletes by label.
MPIJOB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "mpijobs.kubeflow.org"},
    "spec": {
        "group": "kubeflow.org",
        "names": {"kind": "MPIJob", "listKind": "MPIJobList", "plural": "mpijobs",
                  "singular": "mpijob"},
        "scope": "Namespaced",
        "versions": [{
            "name": "v2beta1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object",
                                           "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}  # fmt: skip


@dataclass
class RealDwsStack:
    """The processes of one stack, started by :meth:`start`, stopped by :meth:`stop`."""

    paths: RealDws
    workdir: Path
    mapping: RabbitMapping
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: list[IO[bytes]] = field(default_factory=list)
    kube: KubeEndpoint | None = None

    def start(self) -> KubeEndpoint:
        """Start every process, install every object; return the API server's endpoint
        once every rabbit's Storage is Ready."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        assert self.kube is not None
        return self.kube

    def _start(self) -> None:
        etcd, peer, port = free_port(), free_port(), free_port()
        data = self.workdir / "etcd"
        self._spawn(
            "etcd",
            [
                *("--data-dir", str(data), "--listen-client-urls", f"http://127.0.0.1:{etcd}"),
                *("--advertise-client-urls", f"http://127.0.0.1:{etcd}"),
                *("--listen-peer-urls", f"http://127.0.0.1:{peer}"),
                *("--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}"),
                *("--initial-cluster", f"default=http://127.0.0.1:{peer}"),
            ],
        )
        self.kube = kube = with_identities(port, self.workdir / "kube")
        assert kube.token_file and kube.tls_cert and kube.tls_key and kube.admin_kubeconfig
        signing, verifying = _service_account_keys(self.workdir / "kube")
        self._spawn(
            "kube-apiserver",
            [
                *(f"--etcd-servers=http://127.0.0.1:{etcd}", "--bind-address=127.0.0.1"),
                *(f"--secure-port={port}", f"--token-auth-file={kube.token_file}"),
                *(f"--tls-cert-file={kube.tls_cert}", f"--tls-private-key-file={kube.tls_key}"),
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={verifying}",
                f"--service-account-signing-key-file={signing}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--disable-admission-plugins=ServiceAccount",
                f"--audit-policy-file={self._audit_policy()}",
                f"--audit-log-path={self.workdir / AUDIT_LOG}",
            ],
        )
        self._ready(kube)
        src = self.paths.src
        lustre = "nnf-sos/vendor/github.com/NearNodeFlash/lustre-fs-operator/config/crd/bases"
        for crds in ("dws/config/crd/bases", "nnf-sos/config/crd/bases", lustre):
            self.kubectl("apply", "--server-side", "-f", str(src / crds), ignore=r"crd\.go")
        # nnf-sos deletes a Workflow's container MPIJobs (kubeflow) whether it had any or
        # not, and keeps the Workflow's finalizer while the kind is unknown: a schemaless
        # MPIJob CRD stands in for kubeflow's (no upstream YAML holds it here)
        self.apply(yaml.safe_dump(MPIJOB_CRD))
        self._webhooks()
        env = {"POD_NAMESPACE": "default", "ENVIRONMENT": "kind"}
        self._spawn("dws", ["--mode=controller", *self._manager_flags()], env)
        nnf = {
            "DWS_DRIVER_ID": "nnf",
            "ENVIRONMENT": "kind",
            "ENABLE_WEBHOOKS": "false",
            "NNF_POD_NAMESPACE": "nnf-system",
            **{f"NNF_{k}_PROFILE_NAMESPACE": "nnf-system" for k in ("STORAGE", "CONTAINER", "DM")},
        }
        self._spawn("nnf-sos", ["--controller=storage", *self._manager_flags()], nnf, "nnf-storage")
        self.apply(self._site())
        self.kubectl(
            "apply", "-n", "default", "-f", str(src / "nnf-sos/config/dws/nnf-ruleset.yaml")
        )
        self.kubectl("apply", "-f", str(rbac_manifest()))
        for rabbit in self.mapping.rabbits:
            self._rabbit(rabbit, nnf)
        self._storages_ready()

    # --- pieces ---------------------------------------------------------------------
    def _manager_flags(self) -> list[str]:
        assert self.kube is not None and self.kube.admin_kubeconfig is not None
        return [
            f"--kubeconfig={self.kube.admin_kubeconfig}",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
        ]

    def _webhooks(self) -> None:
        """``dws --mode=webhook`` with a certificate of its own, and the Workflow webhooks
        pointed at it (as envtest points them: a local URL and the CA)."""
        tmp = self.workdir / "webhook-tmp"
        certs = tmp / "k8s-webhook-server" / "serving-certs"
        certs.mkdir(parents=True, exist_ok=True)
        ca_pem = _self_signed(certs / "tls.crt", certs / "tls.key")
        self._spawn("dws", ["--mode=webhook", *self._manager_flags()], {
            "POD_NAMESPACE": "default", "TMPDIR": str(tmp)}, "dws-webhook")  # fmt: skip
        manifest = (self.paths.src / "dws/config/webhook/manifests.yaml").read_text()
        bundle = base64.b64encode(ca_pem).decode()
        service = r"    service:\n      name: webhook-service\n      namespace: system\n"
        pointed = re.sub(
            service + r"      path: (\S+)",
            lambda m: (
                f"    url: https://127.0.0.1:{WEBHOOK_PORT}{m.group(1)}\n    caBundle: {bundle}"
            ),
            manifest,
        )
        self._await_port(WEBHOOK_PORT, "dws-webhook")
        self.apply(pointed)

    def _site(self) -> str:
        """nnf-system, the default storage profile and the SystemConfiguration."""
        template = (
            self.paths.src / "nnf-sos/config/examples/nnf_nnfstorageprofile.yaml"
        ).read_text()
        profile = template.replace("name: template", "name: default", 1)
        profile = profile.replace("  default: false", "  default: true", 1)
        nodes = [
            {
                "type": "Rabbit",
                "name": rabbit,
                "computesAccess": [
                    {"name": c, "index": i} for i, c in enumerate(self.mapping.computes_of(rabbit))
                ],
            }
            for rabbit in self.mapping.rabbits
        ]
        config = {
            "apiVersion": "dataworkflowservices.github.io/v1alpha7",
            "kind": "SystemConfiguration",
            "metadata": {"name": "default", "namespace": "default"},
            "spec": {"storageNodes": nodes, "externalComputeNodes": [], "ports": [],
                     "portsCooldownInSeconds": 60},
        }  # fmt: skip
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nnf-system"}}
        return "\n---\n".join([yaml.safe_dump(namespace), profile, yaml.safe_dump(config)])

    def _rabbit(self, rabbit: str, nnf: dict[str, str]) -> None:
        """A rabbit's Node (Ready), its node manager's Pod (running), the namespaces of it
        and its computes, and its node manager."""
        pod = f"nnf-node-manager-{rabbit}"
        names = [rabbit, *self.mapping.computes_of(rabbit)]
        objects = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names
        ]
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": rabbit, "labels": {"cray.nnf.node": "true"}},
            }
        )
        spec = {"nodeName": rabbit, "containers": [{"name": "manager", "image": "nnf-sos"}]}
        meta = {"name": pod, "namespace": "nnf-system"}
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
        self.apply(yaml.safe_dump_all(objects))
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready",
                 "lastHeartbeatTime": now, "lastTransitionTime": now}  # fmt: skip
        self.kubectl("patch", "node", rabbit, "--subresource=status", "--type=merge",
                     "-p", json.dumps({"status": {"conditions": [ready]}}))  # fmt: skip
        running = {"phase": "Running", "containerStatuses": [{
            "name": "manager", "ready": True, "restartCount": 0, "image": "nnf-sos", "imageID": "",
            "state": {"running": {"startedAt": now}}}]}  # fmt: skip
        self.kubectl("patch", "pod", "-n", "nnf-system", pod, "--subresource=status",
                     "--type=merge", "-p", json.dumps({"status": running}))  # fmt: skip
        root = self.workdir / "rabbits" / rabbit
        for sub in ("mnt", "fence-requests", "fence-responses"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        env = {**nnf, "RABBIT_NODE": "0", "NNF_NODE_NAME": rabbit, "NNF_POD_NAME": pod,
               "MOCK_FILE_SYSTEM_PATH": str(root / "mnt"),
               "NNF_FENCE_REQUEST_DIR": str(root / "fence-requests"),
               "NNF_FENCE_RESPONSE_DIR": str(root / "fence-responses")}  # fmt: skip
        flags = ["--controller=node", "--mock", *self._manager_flags()]
        self._spawn("nnf-sos", flags, env, f"nnf-node-{rabbit}", cwd=root)

    def _storages_ready(self) -> None:
        deadline = time.monotonic() + START_S
        wanted = set(self.mapping.rabbits)
        while True:
            out = self.kubectl("get", "storages", "-o", "json")
            items = json.loads(out).get("items", [])
            ready = {
                s["metadata"]["name"]
                for s in items
                if (s.get("status") or {}).get("status") == "Ready"
            }
            if wanted <= ready:
                return
            self._alive()
            if time.monotonic() > deadline:
                raise ConfigError(
                    f"the real stack's Storages never got Ready: {sorted(wanted - ready)}"
                )
            time.sleep(0.5)

    # --- plumbing -------------------------------------------------------------------
    def kubectl(self, *args: str, ignore: str | None = None) -> str:
        """Run kubectl as the admin; its output. A failure raises, but for lines of its
        error output matching ``ignore``."""
        assert self.kube is not None and self.kube.admin_kubeconfig is not None
        done = subprocess.run(
            ["kubectl", f"--kubeconfig={self.kube.admin_kubeconfig}", *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        lines = done.stderr.splitlines()
        errors = [line for line in lines if not (ignore and re.search(ignore, line))]
        if done.returncode != 0 and errors:
            raise ConfigError(f"kubectl {' '.join(args[:3])}: {' '.join(errors)[:500]}")
        return done.stdout

    def apply(self, text: str) -> None:
        path = self.workdir / "apply.yaml"
        path.write_text(text)
        self.kubectl("apply", "-f", str(path))

    def _spawn(
        self,
        binary: str,
        args: list[str],
        env: dict[str, str] | None = None,
        name: str | None = None,
        cwd: Path | None = None,
    ) -> None:
        name = name or binary
        log = (self.workdir / f"{name}.log").open("ab")
        self.logs.append(log)
        argv = die_with_parent([str(self.paths.bin / binary), *args])
        self.procs[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
            cwd=cwd or self.workdir,
        )  # fmt: skip

    def _alive(self) -> None:
        dead = [n for n, p in self.procs.items() if p.poll() is not None]
        if dead:
            raise ConfigError(f"the real stack's {', '.join(dead)} exited; see {self.workdir}")

    def _ready(self, kube: KubeEndpoint) -> None:
        """Wait for the API server's /readyz (as the admin)."""
        assert kube.tls_cert is not None
        context = ssl.create_default_context(cafile=str(kube.tls_cert))
        request = urllib.request.Request(
            f"{kube.url}/readyz", headers={"Authorization": f"Bearer {kube.admin_token}"}
        )
        deadline = time.monotonic() + START_S
        while True:
            try:
                with urllib.request.urlopen(request, context=context, timeout=5) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            self._alive()
            if time.monotonic() > deadline:
                raise ConfigError(f"kube-apiserver never got ready; see {self.workdir}")
            time.sleep(0.3)

    def _await_port(self, port: int, name: str) -> None:
        import socket

        deadline = time.monotonic() + START_S
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            self._alive()
            if time.monotonic() > deadline:
                raise ConfigError(f"{name} never listened on {port}; see {self.workdir}")
            time.sleep(0.2)

    def _audit_policy(self) -> Path:
        """Every request's user and answer (level Metadata), once it is answered."""
        policy = {
            "apiVersion": "audit.k8s.io/v1",
            "kind": "Policy",
            "omitStages": ["RequestReceived", "ResponseStarted"],
            "rules": [{"level": "Metadata"}],
        }
        path = self.workdir / "audit-policy.yaml"
        path.write_text(yaml.safe_dump(policy))
        return path

    def refused(self, user: str) -> list[str]:
        """Each request of ``user`` the API server answered 403, as RBAC's words say it."""
        out = []
        log = self.workdir / AUDIT_LOG
        for line in log.read_text().splitlines() if log.exists() else []:
            event = json.loads(line)
            if event.get("user", {}).get("username") != user:
                continue
            if event.get("responseStatus", {}).get("code") == 403:
                ref = event.get("objectRef") or {}
                out.append(
                    f"{event.get('verb')} {ref.get('resource')} {ref.get('name', '')} in "
                    f"{ref.get('namespace', 'the cluster')}: forbidden".replace("  ", " ")
                )
        return out

    def stop(self) -> None:
        """Stop every process (managers first, etcd last)."""
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for log in self.logs:
            log.close()


def _service_account_keys(directory: Path) -> tuple[Path, Path]:
    """The key kube-apiserver signs service-account tokens with, and its public half."""
    key = ec.generate_private_key(ec.SECP256R1())
    signing, verifying = directory / "sa.key", directory / "sa.pub"
    pem = serialization.PrivateFormat.TraditionalOpenSSL
    write_private(
        signing, key.private_bytes(serialization.Encoding.PEM, pem, serialization.NoEncryption())
    )
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    verifying.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, public))
    return signing, verifying


__all__ = ["PINS", "NotBuilt", "RealDws", "RealDwsStack", "describe"]
