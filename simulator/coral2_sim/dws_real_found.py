"""Where the real DWS stack that ``make dws-real`` built is on this machine, or what is
missing: the real-DWS tier, ``demo --dws real`` and ``make record-dws`` look here before
anything starts (:mod:`coral2_sim.dws_real` starts it)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ConfigError

#: The pins ``make dws-real`` builds (its ``DWS_REAL_PINS``).
PINS = "k8s-v1.34.4_etcd-v3.6.4"
#: The binaries the stack runs.
BINARIES = ("etcd", "kube-apiserver", "dws", "nnf-sos")


class NotBuilt(ConfigError):
    """The real stack is not built here; the message says what is missing."""


@dataclass(frozen=True)
class RealDws:
    """Where the binaries are, and the sources the CRDs and manifests come from."""

    bin: Path
    src: Path

    @classmethod
    def find(cls) -> RealDws:
        """The stack this machine has built (``CORAL2_DWS_REAL_BIN`` and
        ``CORAL2_DWS_REAL_SRC``, else ``make dws-real``'s cache); :class:`NotBuilt` naming
        what is missing."""
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        root = cache / "coral2-pipeline" / "dws-real"
        found = cls(
            Path(os.environ.get("CORAL2_DWS_REAL_BIN") or root / PINS / "bin"),
            Path(os.environ.get("CORAL2_DWS_REAL_SRC") or root / "src"),
        )
        missing = [f"{found.bin / b}" for b in BINARIES if not os.access(found.bin / b, os.X_OK)]
        missing += [
            str(found.src / p)
            for p in ("dws/config/crd/bases", "nnf-sos/config/crd/bases", "nnf-sos/config/dws")
            if not (found.src / p).is_dir()
        ]
        if shutil.which("kubectl") is None:
            missing.append("kubectl")
        if missing:
            raise NotBuilt("not built (make dws-real; docs/testing.md): no " + ", ".join(missing))
        return found


def describe(found: RealDws) -> str:
    """One line naming what the tier runs against."""
    return f"real-DWS tier: runs against {found.bin} (kube-apiserver, etcd, dws, nnf-sos)"


__all__ = ["BINARIES", "PINS", "NotBuilt", "RealDws", "describe"]
