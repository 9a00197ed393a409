"""`coral2-pipeline sim kube-api` prints its URL first and serves the official client."""

from __future__ import annotations

import signal
import subprocess
import sys

from kubernetes import client


def test_the_standalone_server_prints_its_url_and_serves_until_terminated() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "sim", "kube-api"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            api = client.ApiClient(client.Configuration(host=url))
            listing = client.CustomObjectsApi(api).list_namespaced_custom_object(
                "dataworkflowservices.github.io", "v1alpha7", "default", "workflows"
            )
            assert listing["items"] == []
            api.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0


def test_with_dws_the_server_has_the_mapping_storages_and_a_controller() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "sim", "kube-api", "--with-dws"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            api = client.ApiClient(client.Configuration(host=url))
            custom = client.CustomObjectsApi(api)
            storages = custom.list_namespaced_custom_object(
                "dataworkflowservices.github.io", "v1alpha7", "default", "storages"
            )
            assert sorted(s["metadata"]["name"] for s in storages["items"]) == [
                "rabbit1",
                "rabbit2",
                "rabbit3",
                "rabbit4",
            ]
            api.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0
