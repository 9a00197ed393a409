"""The VNI pool in Redis: flux-coral2's ``vnipool``, atomic, persistent, with a quarantine.

Every change is one Lua script, so any number of workers reserve and
release at once and no VNI is ever held by two jobs. The state survives a
restart of every process (flux-coral2's lives in the job manager's memory):

* ``<prefix>:vnipool`` — ``universe`` (the configured idset), ``ranges`` (it
  as JSON ``[lo, hi, ...]``) and ``cursor`` (the VNI last handed out; -1: none);
* ``<prefix>:vnipool:free`` — the free VNIs, a sorted set scored by VNI, so the
  round robin's "next free after the cursor, wrapping" is one range query;
* ``<prefix>:vnipool:jobs`` — jobid → JSON array of its VNIs, in allocation order;
* ``<prefix>:vnipool:quarantine`` — jobid → ``{"vnis", "waiting"}``: released
  VNIs whose CXI services may still exist on the ``waiting`` nodes;
* ``<prefix>:vnipool:held`` — VNI → jobid for every VNI reserved or quarantined.

**Quarantine.** A job's VNIs go back to the free set only once every node
named at release has confirmed that its CXI services for them are gone
(:meth:`VniPool.confirm_destroyed`: the node epilog, or the sweep of a
drained node). Until then no other job can be given them.

A VNI that is reserved or quarantined is never free, whatever the
configuration does: a new universe frees only VNIs no job holds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import orjson
import redis

from pipeline.errors import InputError, VniError
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.idset import encode_idset
from pipeline.model.jobid import encode_f58
from pipeline.model.slingshot import check_count, parse_universe, reserve_failure
from pipeline.store.connection import translated
from pipeline.store.keys import Keys

__all__ = ["VniError", "VniPool"]

# Lua helpers shared by the scripts: is a VNI inside the universe's ranges; free a VNI.
_HELPERS = """
local function in_universe(ranges, vni)
  for i = 1, #ranges, 2 do
    if vni >= ranges[i] and vni <= ranges[i + 1] then return true end
  end
  return false
end
local function ranges_of(meta)
  local raw = redis.call('HGET', meta, 'ranges')
  if not raw then return {} end
  return cjson.decode(raw)
end
local function give_back(meta, free, held, vnis)
  local ranges = ranges_of(meta)
  for _, vni in ipairs(vnis) do
    redis.call('HDEL', held, vni)
    if in_universe(ranges, vni) then redis.call('ZADD', free, vni, vni) end
  end
end
local function array(values)
  if #values == 0 then return '[]' end
  return cjson.encode(values)
end
"""

# KEYS: meta, free, held, jobs, quarantine. ARGV: universe text, ranges JSON.
_CONFIGURE = (
    _HELPERS
    + """
if redis.call('HGET', KEYS[1], 'universe') == ARGV[1] then return 0 end
local old = ranges_of(KEYS[1])
local new = cjson.decode(ARGV[2])
local had_universe = redis.call('EXISTS', KEYS[1]) == 1
local free = {}
for i = 1, #new, 2 do
  for vni = new[i], new[i + 1] do
    local held = redis.call('HEXISTS', KEYS[3], vni) == 1
    if not held and (not had_universe or not in_universe(old, vni)
                     or redis.call('ZSCORE', KEYS[2], vni)) then
      free[#free + 1] = vni
    end
  end
end
redis.call('DEL', KEYS[2])
for i = 1, #free, 2000 do
  local batch = {}
  for j = i, math.min(i + 1999, #free) do
    batch[#batch + 1] = free[j]
    batch[#batch + 1] = free[j]
  end
  redis.call('ZADD', KEYS[2], unpack(batch))
end
redis.call('HSET', KEYS[1], 'universe', ARGV[1], 'ranges', ARGV[2], 'cursor', -1)
return 1
"""
)

# KEYS: meta, free, held, jobs. ARGV: jobid, count.
# Returns {1, vnis JSON} or {0, available}.
_RESERVE = (
    _HELPERS
    + """
local existing = redis.call('HGET', KEYS[4], ARGV[1])
if existing then return {1, existing} end
local count = tonumber(ARGV[2])
local cursor = tonumber(redis.call('HGET', KEYS[1], 'cursor') or '-1')
local got = {}
for i = 1, count do
  local next = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. cursor, '+inf', 'LIMIT', 0, 1)
  if #next == 0 then next = redis.call('ZRANGE', KEYS[2], 0, 0) end
  if #next == 0 then break end
  local vni = tonumber(next[1])
  redis.call('ZREM', KEYS[2], vni)
  cursor = vni
  got[#got + 1] = vni
end
redis.call('HSET', KEYS[1], 'cursor', cursor)
if #got < count then
  for _, vni in ipairs(got) do redis.call('ZADD', KEYS[2], vni, vni) end
  return {0, redis.call('ZCARD', KEYS[2])}
end
for _, vni in ipairs(got) do redis.call('HSET', KEYS[3], vni, ARGV[1]) end
local text = array(got)
redis.call('HSET', KEYS[4], ARGV[1], text)
return {1, text}
"""
)

# KEYS: meta, free, held, jobs. ARGV: jobid, then its VNIs.
# Returns {1, vnis JSON}, or {0, the job holding one of them}.
_RESTORE = (
    _HELPERS
    + """
local existing = redis.call('HGET', KEYS[4], ARGV[1])
if existing then return {1, existing} end
for i = 2, #ARGV do
  local holder = redis.call('HGET', KEYS[3], ARGV[i])
  if holder and holder ~= ARGV[1] then return {0, holder} end
end
local got = {}
for i = 2, #ARGV do
  local vni = tonumber(ARGV[i])
  redis.call('ZREM', KEYS[2], vni)
  redis.call('HSET', KEYS[3], vni, ARGV[1])
  got[#got + 1] = vni
end
local text = array(got)
redis.call('HSET', KEYS[4], ARGV[1], text)
return {1, text}
"""
)

# KEYS: meta, free, held, jobs, quarantine. ARGV: jobid, waiting nodes JSON, now (epoch s).
# Returns 0 for an unknown job, 1 when freed, 2 when quarantined.
_RELEASE = (
    _HELPERS
    + """
local raw = redis.call('HGET', KEYS[4], ARGV[1])
if not raw then return 0 end
redis.call('HDEL', KEYS[4], ARGV[1])
local vnis = cjson.decode(raw)
local waiting = cjson.decode(ARGV[2])
if #waiting == 0 or #vnis == 0 then
  give_back(KEYS[1], KEYS[2], KEYS[3], vnis)
  return 1
end
local entry = {vnis = vnis, waiting = waiting, since = tonumber(ARGV[3])}
redis.call('HSET', KEYS[5], ARGV[1], cjson.encode(entry))
return 2
"""
)

# KEYS: meta, free, held, quarantine. ARGV: jobid, then the nodes confirmed.
# Returns -1 when the job has no quarantine, else how many nodes it still waits for.
_CONFIRM = (
    _HELPERS
    + """
local raw = redis.call('HGET', KEYS[4], ARGV[1])
if not raw then return -1 end
local entry = cjson.decode(raw)
local confirmed = {}
for i = 2, #ARGV do confirmed[ARGV[i]] = true end
local left = {}
for _, node in ipairs(entry.waiting) do
  if not confirmed[node] then left[#left + 1] = node end
end
if #left == 0 then
  redis.call('HDEL', KEYS[4], ARGV[1])
  give_back(KEYS[1], KEYS[2], KEYS[3], entry.vnis)
  return 0
end
if #left < #entry.waiting then
  entry.waiting = left
  redis.call('HSET', KEYS[4], ARGV[1], cjson.encode(entry))
end
return #left
"""
)


@translated
class VniPool:
    """The pipeline's VNI pool (one per deployment, under the store's key prefix)."""

    def __init__(self, client: redis.Redis, keys: Keys | None = None) -> None:
        self.client = client
        self.keys = keys or Keys("coral2")
        base = f"{self.keys.prefix}:vnipool"
        self._meta, self._free, self._held = base, f"{base}:free", f"{base}:held"
        self._jobs, self._quarantine = f"{base}:jobs", f"{base}:quarantine"
        self._configure = client.register_script(_CONFIGURE)
        self._reserve = client.register_script(_RESERVE)
        self._restore = client.register_script(_RESTORE)
        self._release = client.register_script(_RELEASE)
        self._confirm = client.register_script(_CONFIRM)

    def _run(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        return script(keys=keys, args=args)

    def configure(self, universe: str) -> None:
        """Set the pool's universe (an RFC 22 idset). The same universe again changes
        nothing (the round robin goes on where it was); a new one frees every VNI in it
        that no job holds, and the round robin starts again from its lowest VNI.
        ValueError with flux-coral2's message when ``universe`` is invalid."""
        ranges = parse_universe(universe)
        flat = [bound for pair in ranges for bound in pair]
        keys = [self._meta, self._free, self._held, self._jobs, self._quarantine]
        self._run(self._configure, keys, [universe, json.dumps(flat)])

    def reserve(self, jobid: int, count: int) -> list[int]:
        """Reserve ``count`` VNIs (0 to 4) for ``jobid``, round robin; return them. A job
        that holds VNIs already gets the same ones again (a retried task). VniError with
        flux-coral2's message when the count is out of range or the pool is short (then
        nothing is reserved)."""
        try:
            check_count(count)
        except InputError as exc:
            raise VniError(str(exc)) from exc
        keys = [self._meta, self._free, self._held, self._jobs]
        ok, value = self._run(self._reserve, keys, [jobid, count])
        if not ok:
            raise VniError(reserve_failure(count, int(value)))
        return [int(v) for v in json.loads(value)]

    def restore(self, jobid: int, vnis: Iterable[int]) -> list[int]:
        """Hold ``vnis`` for ``jobid`` again, as Flux says the job holds them (its
        ``cray-slingshot`` event) after the store lost its reservation: taken out of the
        free set whatever the round robin's cursor. A job that holds VNIs already keeps
        them. VniError naming the other job should one of them be held by another."""
        got = [int(v) for v in vnis]
        keys = [self._meta, self._free, self._held, self._jobs]
        ok, value = self._run(self._restore, keys, [jobid, *got])
        if not ok:
            holder = int(value)
            raise VniError(
                f"VNIs {got} of job {encode_f58(jobid)} are held by job {encode_f58(holder)}"
            )
        return [int(v) for v in json.loads(value)]

    def release(self, jobid: int, nodes: Iterable[str] = ()) -> None:
        """Release ``jobid``'s VNIs: free now when ``nodes`` is empty, else quarantined
        until each of ``nodes`` confirms its CXI services for them are gone. VniError
        ``unknown job <f58>`` when the job holds none (released already, or never)."""
        waiting = sorted(set(nodes))
        keys = [self._meta, self._free, self._held, self._jobs, self._quarantine]
        if not self._run(self._release, keys, [jobid, json.dumps(waiting), f"{time.time():.3f}"]):
            raise VniError(f"unknown job {encode_f58(jobid)}")

    def confirm_destroyed(self, jobid: int, *nodes: str) -> None:
        """``nodes`` have no CXI service for ``jobid``'s VNIs any more: once every node the
        release named has said so, the VNIs are free. Confirming twice, or for a job
        that is not in quarantine, changes nothing. Any number of nodes a call: a whole
        machine's in one step."""
        if not nodes:
            return
        keys = [self._meta, self._free, self._held, self._quarantine]
        self._run(self._confirm, keys, [jobid, *nodes])

    def holding(self, jobid: int) -> list[int]:
        """The VNIs ``jobid`` holds (reserved, not released); [] when none."""
        raw = self.client.hget(self._jobs, str(jobid))
        return [] if raw is None else [int(v) for v in json.loads(raw)]

    def counts(self) -> dict[str, int]:
        """How many VNIs are free, reserved and quarantined (no VNI listed: a metric)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.zcard(self._free)
        pipe.hvals(self._jobs)
        pipe.hvals(self._quarantine)
        free, jobs, quarantine = pipe.execute()
        entries = [orjson.loads(v) for v in quarantine]
        return {
            "free": int(free),
            "reserved": sum(len(orjson.loads(v)) for v in jobs),
            "quarantined": sum(len(e["vnis"]) for e in entries),
        }

    def quarantined_since(self) -> float | None:
        """When the VNIs longest in quarantine went there (epoch s; None: none is, or only
        entries an older release wrote without the time)."""
        raw: Any = self.client.hvals(self._quarantine)
        since = [float(e["since"]) for e in map(orjson.loads, raw) if e.get("since")]
        return min(since) if since else None

    def query(self) -> dict[str, Any]:
        """The pool as ``flux jobtap query cray-slingshot.so`` shows it, plus the
        quarantine: ``{"universe", "free", "jobs": {f58: [...]}, "quarantine": {f58:
        {"vnis": [...], "waiting": "<hostlist>"}}}``."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hget(self._meta, "universe")
        pipe.zrange(self._free, 0, -1)
        pipe.hgetall(self._jobs)
        pipe.hgetall(self._quarantine)
        universe, free, jobs, quarantine = pipe.execute()
        waiting: dict[str, Any] = {}
        for jobid, raw in quarantine.items():
            entry = json.loads(raw)
            waiting[encode_f58(int(jobid))] = {
                "vnis": entry["vnis"],
                "waiting": unique_hostlist(entry["waiting"]),
            }
        return {
            "universe": universe.decode() if universe else "",
            "free": encode_idset(list(map(int, free))),
            "jobs": {encode_f58(int(j)): orjson.loads(v) for j, v in jobs.items()},
            "quarantine": waiting,
        }
