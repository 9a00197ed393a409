"""The chaos harness's fault injector: the fault classes and the thread that draws and
applies one fault of its class every so often, recovering as an operator's systemd would
(:mod:`coral2_sim.chaos` runs it against a batch of jobs)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from coral2_sim.clock import SteppingClock
from coral2_sim.kill_points import KILL_FILE_VARIABLE
from coral2_sim.outages import restart_kube, restart_redis
from coral2_sim.system import SimulatedSystem

#: The fault classes of a run (``--faults``): each names the faults it draws from.
CLASSES: dict[str, tuple[str, ...]] = {
    "worker": ("kill worker", "kill worker between actions"),
    "node-worker": ("kill node-worker",),
    "watcher": ("kill watcher",),
    "beat": ("kill beat", "freeze beat"),
    "bridge": ("kill bridge",),
    "redis": ("restart redis", "crash redis", "crash redis host"),
    "kube-api": ("restart kube-api",),
    "clock": ("step clock forward", "step clock back"),
}
CLASSES["mixed"] = tuple(kind for kinds in CLASSES.values() for kind in kinds)
#: At least this long between two faults of Redis (s): each one stalls every process.
REDIS_EVERY_S = 20.0
#: What a crash of Redis's host loses: the writes of its last second (appendfsync everysec).
HOST_CRASH_LOSES_S = 1.0
#: How far a clock step moves the pipeline hosts' clock (s), forward or back.
CLOCK_STEP_S = 3600.0


def needs_clock(kinds: tuple[str, ...]) -> bool:
    """Whether faults of ``kinds`` step the clock (the processes must run on one)."""
    return any("clock" in kind for kind in kinds)


class Faults:
    """Draws and applies faults until stopped."""

    def __init__(
        self,
        system: SimulatedSystem,
        rng: random.Random,
        every_s: float,
        kinds: tuple[str, ...] = CLASSES["mixed"],
        clock: SteppingClock | None = None,
    ) -> None:
        if needs_clock(kinds) and clock is None:
            raise ValueError("clock steps need the processes on a SteppingClock")
        self.system = system
        self.clock = clock
        self.kinds = kinds
        self._redis_at = -REDIS_EVERY_S
        self.rng = rng
        self.every_s = every_s
        #: faults whose effect was observed (the process's death, Redis back from its
        #: restart, the clock moved), and those tried whose effect never came
        self.done: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.timeline: list[str] = []
        self._t0 = time.monotonic()
        self.stop = threading.Event()
        self._idle = threading.Event()
        self._close = threading.Event()
        self._redis_restarted = False
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)

    def start(self) -> Faults:
        self._thread.start()
        return self

    def applied(self) -> int:
        """How many faults were applied so far."""
        return sum(self.done.values())

    def finish(self) -> Counter[str]:
        """Apply no more faults; return those applied."""
        self.stop.set()
        self._idle.wait()
        return self.done

    def close(self) -> None:
        """Let the thread end, once the system is stopped: the processes it restarted die
        with it (each runs with a parent-death signal, which follows the thread that
        started it)."""
        self._close.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.rng.uniform(0.5, 1.5) * self.every_s):
                now = time.monotonic()
                kinds = [
                    k
                    for k in self.kinds
                    if "redis" not in k or now - self._redis_at > REDIS_EVERY_S
                ]
                if not kinds:
                    continue
                kind = self.rng.choice(kinds)
                if "redis" in kind:
                    self._redis_at = now
                at = time.monotonic() - self._t0
                observed = self.apply(kind)
                (self.done if observed else self.skipped)[kind] += 1
                what = kind if observed else f"{kind}: no effect seen, not counted"
                self.timeline.append(f"{at:.1f}-{time.monotonic() - self._t0:.1f} s {what}")
        finally:
            self._idle.set()
        self._close.wait()

    def apply(self, kind: str) -> bool:
        """Apply one fault and recover from it, as an operator's systemd would; return
        whether its effect was observed (a process seen dead, Redis seen back as a new
        process, the clock seen moved) — a fault whose effect never came is not counted."""
        system = self.system
        if kind == "kill worker between actions":
            return self._kill_between()
        if kind == "kill bridge":
            assert system.delivery is not None
            old = list(system.delivery.threads)
            system.delivery.kill(self.rng)  # at its next request to Flux
            deadline = time.monotonic() + 20.0
            while any(t.is_alive() for t in old) and time.monotonic() < deadline:
                time.sleep(0.05)
            return not any(t.is_alive() for t in old)
        if kind.startswith("kill "):
            name = kind.removeprefix("kill ")
            proc = system.procs.get(name)
            system.kill(name)
            died = proc.poll() is not None
            time.sleep(self.rng.uniform(0.2, 2.0))  # systemd's RestartSec
            system.restart(name)
            self._await_up(name)
            return died
        if kind == "freeze beat":
            pid = system.procs.get("beat").pid
            os.kill(pid, signal.SIGSTOP)
            stopped = _state(pid) == "T"
            time.sleep(self.rng.uniform(1.0, 4.0))
            os.kill(pid, signal.SIGCONT)
            return stopped
        if kind == "restart kube-api":
            restart_kube(system, self.rng.uniform(1.0, 5.0))
            return True  # restart_kube returns once the new server answers
        if kind.startswith("step clock"):
            assert self.clock is not None
            step = CLOCK_STEP_S if kind.endswith("forward") else -CLOCK_STEP_S
            moved_from = self.clock.offset_s
            self.clock.step(step)
            return self.clock.offset_s - moved_from == step
        if kind in ("restart redis", "crash redis"):
            self._redis_restarted = True
            assert system.redis is not None
            run_before = system.redis.run_id()
            restart_redis(system, crash=kind == "crash redis")
            return system.redis.run_id() not in (None, run_before)
        if kind == "crash redis host":  # the append-only file cut back by a second
            self._redis_restarted = True
            assert system.redis is not None
            mark = system.redis.aof_mark()
            time.sleep(HOST_CRASH_LOSES_S)
            run_before = system.redis.run_id()
            lost = system.redis.crash_back_to(mark)
            restart_redis(system, down_s=0.5)
            return lost > 0 and system.redis.run_id() not in (None, run_before)
        raise ValueError(f"unknown fault {kind!r}")

    def _kill_between(self) -> bool:
        """Have the worker SIGKILL itself at the next gap between two actions of a task
        (``coral2_sim.kill_points.KILL_FILE_VARIABLE``), then start it again; whether it
        died so (no task acting within 20 s: no kill this time)."""
        system = self.system
        trigger = Path(system.process_env["worker"][KILL_FILE_VARIABLE])
        proc = system.procs.get("worker")
        trigger.touch()
        deadline = time.monotonic() + 20.0
        while proc.poll() is None and trigger.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not trigger.exists():  # taken: the worker unlinks it, then SIGKILLs itself
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        trigger.unlink(missing_ok=True)  # no task acted meanwhile: no kill this time
        if proc.poll() is None:
            return False
        time.sleep(self.rng.uniform(0.2, 2.0))  # systemd's RestartSec
        system.restart("worker")
        self._await_up("worker")
        return True

    def _await_up(self, name: str) -> None:
        """Return once the restarted ``name`` serves (a worker: it answered a ping through
        its queues; the watcher: it holds the lease), so that the next fault strikes a
        process that is up: on a loaded machine, one that takes longer to start than the
        faults' spacing would otherwise be killed before it ever served, and the run would
        measure the machine's speed, not the pipeline."""
        try:
            if name == "node-worker":
                self.system.wait_node_worker()
            elif name == "worker":
                self.system.wait_worker()
            elif name == "watcher":
                self.system.wait_for_watcher(timeout_s=120)
        except Exception as exc:  # a fault thread goes on, whatever happens
            at = time.monotonic() - self._t0
            self.timeline.append(f"{at:.1f} s {name} not serving after its restart: {exc!r}")


def _state(pid: int) -> str:
    """The state letter of process ``pid`` (``T``: stopped), from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[0]


def kill_file(seed: int) -> Path:
    """Where the harness asks the worker to die between two actions of a task."""
    path = Path(tempfile.gettempdir()) / f"coral2-chaos-kill-{os.getpid()}-{seed}"
    path.unlink(missing_ok=True)
    return path
