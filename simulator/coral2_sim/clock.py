"""A wall clock that steps, for the chaos harness and the tests: the clock of chosen
processes moved as NTP or an operator moves a host's clock.

Each process runs with a small preloaded library (``coral2_sim/data/clockstep.c``,
compiled on first use with the system's C compiler into the cache directory) that adds
the offset held in one file to ``CLOCK_REALTIME``, so :meth:`SteppingClock.step` moves
every such process's ``time.time()`` and ``datetime.now()`` at once while their
monotonic clocks and sleeps go on untouched, as a real step leaves them. Redis and the
API server keep the true time, as servers on other hosts would. (libfaketime 0.9.10,
Debian's, fails Python 3.11's sleeps with EINVAL when the monotonic clock is not faked.)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

#: The variable the library reads the offset file's path from.
OFFSET_VARIABLE = "CORAL2_CLOCK_OFFSET_FILE"


def cache_dir() -> Path:
    """Where the compiled library is kept (as ``make flux`` keeps its prefix)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coral2-pipeline"


def compiler() -> str | None:
    """The C compiler, or None when there is none."""
    return shutil.which(os.environ.get("CC", "cc"))


def library() -> Path:
    """The compiled library, built on first use (keyed by its source's hash)."""
    source = files("coral2_sim").joinpath("data/clockstep.c").read_bytes()
    built = cache_dir() / f"clockstep-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if built.exists():
        return built
    cc = compiler()
    if cc is None:
        raise RuntimeError("a stepping clock needs a C compiler (cc): apt-get install gcc")
    built.parent.mkdir(parents=True, exist_ok=True)
    src = built.with_suffix(".c")
    src.write_bytes(source)
    staged = built.with_suffix(f".{os.getpid()}.so")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", "-o", str(staged), str(src), "-ldl"],
        check=True,
        capture_output=True,
    )
    staged.replace(built)  # another process building it at once gets one whole file
    return built


class SteppingClock:
    """The offset file of the processes started with :meth:`env`."""

    def __init__(self, path: Path) -> None:
        self.library = library()
        self.path = path
        self.offset_s = 0.0
        self._write()

    def env(self) -> dict[str, str]:
        """The variables that put a process on this clock."""
        return {"LD_PRELOAD": str(self.library), OFFSET_VARIABLE: str(self.path)}

    def step(self, seconds: float) -> None:
        """Move the clock by ``seconds`` (back when negative)."""
        self.offset_s += seconds
        self._write()

    def _write(self) -> None:
        staged = self.path.with_suffix(".new")
        staged.write_text(f"{self.offset_s:+.3f}\n")
        staged.replace(self.path)  # a reader sees the old offset or the new, never half
