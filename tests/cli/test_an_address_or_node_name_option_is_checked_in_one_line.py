"""An option that names a node (``flux-prolog --node``) goes through the one hostname
check, and one that names an address to listen on (``exporter --address``, ``sim kube-api
--host``) takes an IP address or a hostname the same way: a name of 100,000 characters, a
non-UTF-8 byte or a newline is one usage line and exit 2, never the traceback the
resolver's codec raised."""

from __future__ import annotations

import pytest

from tests.cli.walker import run

ODD = ["a" * 100_000, "\udcff", "a\nb", "", "-x", "compute 01"]
OPTIONS = [
    (["flux-prolog", "-j", "1", "--node"], "argument --node: "),
    (["exporter", "--address"], "argument --address: not an IP address, and "),
    (["sim", "kube-api", "--host"], "argument --host: not an IP address, and "),
]


@pytest.mark.parametrize(
    "value", ODD, ids=["long", "not-utf8", "newline", "empty", "dash", "space"]
)
@pytest.mark.parametrize(
    ("argv", "says"), OPTIONS, ids=lambda o: " ".join(o) if isinstance(o, list) else ""
)
def test_an_odd_name_is_one_usage_line(argv: list[str], says: str, value: str) -> None:
    outcome = run([*argv, value], {})
    assert outcome.status == 2, outcome.stderr
    [line] = outcome.stderr.strip().splitlines()
    assert says in line or "expected one argument" in line, line


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "localhost"])
def test_an_ip_address_or_hostname_is_taken(address: str) -> None:
    from pipeline.cli import kinds

    assert kinds.address(address) == address
