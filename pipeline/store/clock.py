"""One clock for every due time the store keeps: deadlines and ledger resends.

Due times are wall-clock seconds, written by processes on the management hosts. When a
host's clock steps (NTP, an operator), times written before the step and times written
after it no longer compare: a step forward of an hour would fire every deadline (jobs
failed, nodes drained for an answer they gave), a step back would delay every one by
the hour. So every write of a due time, and the deadline sweep each second, first runs
:data:`REBASE` against the clock the store last saw (``<prefix>:deadlines:clock``): a
clock that moved back by more than :data:`GRACE_S`, or forward by more (a step, or the
pipeline not running), moves every due time by as much, in the same Redis step, before
anything is written under the new clock. Time the pipeline did not see is not counted
against a node or a Workflow.

A task that retries postpones its ledger resend after such a check too
(``pipeline.platform.task``), in the round trip that releases its lock.

Small moves within the grace are ordinary (sweeps a second apart, hosts a few
milliseconds apart, calls racing each other): the clock only moves forward on them, and
only once it is :data:`TICK_S` behind (one write a second, not one per due time written;
a step is then seen within the grace plus that second).
"""

from __future__ import annotations

#: How far the clock may move between two writes, forwards or back, before due times
#: move with it (s). Beat sweeps every second, so a gap this long is not ordinary.
GRACE_S = 30.0

#: How far behind the kept clock may fall before an ordinary write moves it forward (s).
TICK_S = 1.0

#: A Lua function for the scripts that write due times. ``rebase(clock, sets, now,
#: grace)``: compare ``now`` with the clock kept under key ``clock``; past the grace,
#: move every member of each sorted set of ``sets`` by the difference (in batches:
#: ``unpack`` has a limit). Returns the move (0: none).
REBASE = """
local function rebase(clock, sets, now, grace)
  local last = tonumber(redis.call('get', clock) or '')
  if not last then
    redis.call('set', clock, tostring(now))
    return 0
  end
  local gap = now - last
  if gap > -grace and gap <= grace then
    if gap >= TICK_S then redis.call('set', clock, tostring(now)) end
    return 0
  end
  redis.call('set', clock, tostring(now))
  for _, key in ipairs(sets) do
    local all = redis.call('zrange', key, 0, -1, 'WITHSCORES')
    local batch = {}
    for i = 1, #all, 2 do
      batch[#batch + 1] = tonumber(all[i + 1]) + gap
      batch[#batch + 1] = all[i]
      if #batch >= 2000 then redis.call('zadd', key, unpack(batch)); batch = {} end
    end
    if #batch > 0 then redis.call('zadd', key, unpack(batch)) end
  end
  return gap
end
""".replace("TICK_S", repr(TICK_S))
