//! The Lua scripts behind the distributed components. Each one is atomic on the
//! server, idempotent where the client may send it twice (a retry after a lost
//! connection), and repairs a key of the wrong type instead of failing forever: the
//! key's `DUMP` goes to the list `<key>:bad` and the key is deleted (nothing lost; a
//! user can `RESTORE` it), and the count comes back for the log and the stats.
//!
//! Scripts build the per-worker lease keys from a prefix (`<queue>:leases:<worker>`);
//! on a Redis Cluster every key of a shard carries the shard's hash tag, so each
//! script touches one slot.
//!
//! A pop's leases are one field of the worker's lease hash: `<token>` (the pop's token,
//! unique within the worker) → a MessagePack array of the entries' lease values in the
//! order of the pop's reply, so an entry's place is known to the worker without hashing
//! it, and no other entry can share it. Lease values are `"<score> <member>"` for a
//! priority queue and `"L <member>"` for a list, enough to put the entry back where it
//! was (an entry of a list per priority is `"<score> <record>"` already, and is its own
//! lease value). The worker acknowledges a pop's entries by marking their places in
//! `<token>:a` (`1` per finished place, the others `0`) and deletes both fields once
//! every entry is finished; a field `<token>:<place>` holding one lease value (written
//! before pops kept one field) is still put back when its worker stops.
//!
//! Queue modes: `p` (trawl's priority queue: a FIFO list `<queue>:p:<score>` per
//! priority, the queue key a sorted set of the scores that have one, and the count
//! of entries in the meta hash's `queued` — the structure of Scrapy's own priority
//! queue, a push and a pop a fraction of a sorted set's), `z` (one sorted set of
//! entries: scrapy-redis's priority queue, and native crawls begun with it), `fifo`
//! and `lifo` (one list).

use std::sync::OnceLock;

use crate::client::redis::Script;

const PRELUDE: &str = r"
local function fix_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t == 'none' or t == want then return 0 end
  redis.call('RPUSH', key .. ':bad', redis.call('DUMP', key))
  redis.call('DEL', key)
  return 1
end
local function call_on(key, want, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r['err'] then
    if not string.find(r['err'], 'WRONGTYPE', 1, true) then error(r) end
    local f = fix_type(key, want)
    return redis.call(...), f
  end
  return r, 0
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function qtype(mode)
  if mode == 'z' or mode == 'p' then return 'zset' end
  return 'list'
end
local function plist(q, score)
  return q .. ':p:' .. score
end
local function requeue(q, mode, value)
  local score, member
  if mode == 'p' and string.byte(value, 1) == 1 then
    -- A bare record (a list's entry from before scores led them): priority 0.
    score, member = '0', value
  else
    local sp = string.find(value, ' ', 1, true)
    if not sp then return 0 end
    score = string.sub(value, 1, sp - 1)
    member = string.sub(value, sp + 1)
    if mode == 'p' then
      -- A list's entry is `<score> <record>`, the lease value itself.
      if score == 'L' or not tonumber(score) then score = '0' else member = value end
    elseif score == 'L' and mode == 'z' then
      score = '0'
    end
  end
  if mode == 'p' then
    fix_type(plist(q, score), 'list')
    redis.call('LPUSH', plist(q, score), member)
    redis.call('ZADD', q, score, score)
  elseif mode == 'z' then
    redis.call('ZADD', q, score, member)
  elseif mode == 'fifo' then
    redis.call('RPUSH', q, member)
  else
    redis.call('LPUSH', q, member)
  end
  return 1
end
local function pop_leases(v)
  -- A pop's field: its MessagePack array (nil if unreadable), and true; else nil, false.
  local b = string.byte(v, 1)
  if not (b ~= nil and ((b >= 0x90 and b <= 0x9f) or b == 0xdc or b == 0xdd)) then
    return nil, false
  end
  local ok, vals = pcall(cmsgpack.unpack, v)
  if ok and type(vals) == 'table' then return vals, true end
  return nil, true
end
local function requeue_leases(q, mode, h)
  local n = 0
  local kv = redis.call('HGETALL', h)
  local marks = {}
  for i = 1, #kv, 2 do
    if string.sub(kv[i], -2) == ':a' then marks[string.sub(kv[i], 1, -3)] = kv[i + 1] end
  end
  for i = 1, #kv, 2 do
    local f, v = kv[i], kv[i + 1]
    if string.sub(f, -2) ~= ':a' then
      local vals, packed = pop_leases(v)
      if packed then
        if vals then
          local done = marks[f] or ''
          for j, e in ipairs(vals) do
            if string.byte(done, j) ~= 49 and type(e) == 'string' then
              n = n + requeue(q, mode, e)
            end
          end
        else
          redis.call('RPUSH', q .. ':bad', v)
        end
      else
        -- One lease value (a field `<token>:<place>`, written before pops kept one).
        n = n + requeue(q, mode, v)
      end
    end
  end
  return n
end
local function reap(q, mode, workers, prefix, now, me)
  local n = 0
  local dead = redis.call('ZRANGEBYSCORE', workers, '-inf', now, 'LIMIT', 0, 16)
  for _, w in ipairs(dead) do
    if w ~= me then
      local h = prefix .. w
      n = n + requeue_leases(q, mode, h)
      redis.call('DEL', h, h .. ':last')
      redis.call('ZREM', workers, w)
    end
  end
  return n
end
local function qlen(q, mode, meta, count, more)
  if mode == 'z' then return redis.call('ZCARD', q) end
  if mode ~= 'p' then return redis.call('LLEN', q) end
  local n = count or tonumber(redis.call('HGET', meta, 'queued')) or 0
  if n > 0 and (more or redis.call('ZCARD', q) > 0) then return n end
  if n == 0 and redis.call('ZCARD', q) == 0 then return 0 end
  n = 0
  for _, s in ipairs(redis.call('ZRANGE', q, 0, -1)) do
    n = n + redis.call('LLEN', plist(q, s))
  end
  redis.call('HSET', meta, 'queued', n)
  return n
end
local function queued(meta, mode, n)
  if mode == 'p' and n ~= 0 then return redis.call('HINCRBY', meta, 'queued', n) end
end
local function del_queue(q, mode)
  if mode == 'p' and redis.call('TYPE', q)['ok'] == 'zset' then
    for _, s in ipairs(redis.call('ZRANGE', q, 0, -1)) do redis.call('DEL', plist(q, s)) end
  end
  redis.call('DEL', q)
end
local function leased_any(workers, prefix)
  local from = 0
  while true do
    local ws = redis.call('ZRANGE', workers, from, from + 31)
    for _, w in ipairs(ws) do
      local n = redis.call('HLEN', prefix .. w)
      if n > 0 then return n end
    end
    if #ws < 32 then return 0 end
    from = from + 32
  end
end
local function bloom_add(prefix, spec)
  local bits = {}
  local all = true
  for b, o in string.gmatch(spec, '(%d+):(%d+)') do
    local key = prefix .. ':' .. b
    bits[#bits + 1] = {key, o}
    if all and redis.call('GETBIT', key, o) == 0 then all = false end
  end
  if all then return 0 end
  for _, kb in ipairs(bits) do redis.call('SETBIT', kb[1], kb[2], 1) end
  redis.call('INCR', prefix .. ':count')
  return 1
end
local function del_bloom(prefix, blocks)
  for b = 0, blocks - 1 do redis.call('DEL', prefix .. ':' .. b) end
  redis.call('DEL', prefix .. ':count')
end
";

/// `OPEN`: KEYS meta, queue, dupefilter, workers; ARGV flush (`1`), worker, lease ms,
/// mode, layout, bloom blocks, fingerprinter, fingerprints (`raw`: a SET dupefilter of
/// 20-byte fingerprints, `hex`: of 40 hex digits). Flushes when asked (queue, dupefilter,
/// meta), creates the crawl's meta hash (`created`, `mode`, `layout`, `fingerprinter`)
/// or checks that an existing one matches this worker's configuration (error
/// `TRAWLLAYOUT`, or `TRAWLFINGERPRINTER` for another `REQUEST_FINGERPRINTER_CLASS`; a
/// meta hash without the field was written with the default), registers the worker.
/// A native crawl begun with the sorted-set priority queue (`z`) goes on in it when
/// this worker asks for lists (`p`), and a crawl's dupefilter keeps the fingerprints'
/// recorded form (`hex` when the meta hash names none: written before the field).
/// Returns `{queue length, keys repaired, mode, fingerprints}`.
const OPEN: &str = r"
local meta, q, df, workers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local flush, me, lease, mode, layout, blocks, fpr, fps = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7], ARGV[8] or 'hex'
if flush == '1' then
  local was = mode
  if redis.call('TYPE', meta)['ok'] == 'hash' then was = redis.call('HGET', meta, 'mode') or mode end
  del_queue(q, was)
  redis.call('DEL', df, meta)
  del_bloom(df, blocks)
end
local now = now_ms()
local fixed = fix_type(meta, 'hash')
if redis.call('HEXISTS', meta, 'created') == 0 then
  redis.call('HSET', meta, 'created', now, 'mode', mode, 'layout', layout, 'fingerprinter', fpr, 'fingerprints', fps)
else
  local m = redis.call('HMGET', meta, 'mode', 'layout', 'fingerprinter', 'fingerprints')
  fps = m[4] or 'hex'
  if m[1] == 'z' and mode == 'p' and layout == 'native' then mode = 'z' end
  if m[1] ~= mode or m[2] ~= layout then
    return redis.error_reply('TRAWLLAYOUT the queue ' .. q .. ' holds ' .. tostring(m[2]) .. ' entries in a ' .. tostring(m[1]) .. ' queue; this worker is configured for ' .. layout .. ' entries in a ' .. mode .. ' queue')
  end
  local written = m[3] or 'trawl.RequestFingerprinter'
  if written ~= fpr then
    return redis.error_reply('TRAWLFINGERPRINTER the crawl in ' .. q .. ' fingerprints requests with ' .. written .. '; this worker uses ' .. fpr .. ' (REQUEST_FINGERPRINTER_CLASS): its dupefilter would not match')
  end
end
redis.call('ZADD', workers, now + lease, me)
fixed = fixed + fix_type(q, qtype(mode))
return {qlen(q, mode, meta), fixed, mode, fps}
";

/// `OPEN_CRAWL` (a crawl sharded over a Redis Cluster): KEYS the crawl's meta hash;
/// ARGV flush (`1`), mode, layout, fingerprinter, shards, explicit (`1` when
/// `SCHEDULER_SHARDS` was set). Creates the record of the crawl (`created`, `mode`,
/// `layout`, `fingerprinter`, `shards`) or checks a worker against it: another queue
/// layout or fingerprinter is refused as `OPEN` refuses them, and an explicit shard
/// count that is not the recorded one with `TRAWLSHARDS` (a recorded `z` queue is
/// accepted for `p`, as in `OPEN`). Returns the crawl's shard count (the recorded one
/// when this worker's was a default).
const OPEN_CRAWL: &str = r"
local meta = KEYS[1]
local flush, mode, layout, fpr, shards, explicit = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
if flush == '1' then redis.call('DEL', meta) end
fix_type(meta, 'hash')
if redis.call('HEXISTS', meta, 'created') == 0 then
  redis.call('HSET', meta, 'created', now_ms(), 'mode', mode, 'layout', layout, 'fingerprinter', fpr, 'shards', shards)
  return shards
end
local m = redis.call('HMGET', meta, 'mode', 'layout', 'fingerprinter', 'shards')
if m[1] == 'z' and mode == 'p' and layout == 'native' then mode = 'z' end
if m[1] ~= mode or m[2] ~= layout then
  return redis.error_reply('TRAWLLAYOUT the crawl recorded in ' .. meta .. ' holds ' .. tostring(m[2]) .. ' entries in a ' .. tostring(m[1]) .. ' queue; this worker is configured for ' .. layout .. ' entries in a ' .. mode .. ' queue')
end
if (m[3] or 'trawl.RequestFingerprinter') ~= fpr then
  return redis.error_reply('TRAWLFINGERPRINTER the crawl recorded in ' .. meta .. ' fingerprints requests with ' .. tostring(m[3]) .. '; this worker uses ' .. fpr .. ' (REQUEST_FINGERPRINTER_CLASS): its dupefilter would not match')
end
local recorded = tonumber(m[4])
if recorded == nil then
  return redis.error_reply('TRAWLSHARDS ' .. meta .. ' records no shard count: it was written by a single-server crawl')
end
if explicit == '1' and recorded ~= shards then
  return redis.error_reply('TRAWLSHARDS the crawl recorded in ' .. meta .. ' has ' .. recorded .. ' shards; this worker has SCHEDULER_SHARDS = ' .. shards .. ' (the count is fixed for the life of a crawl: requests are placed by it)')
end
return recorded
";

/// `RENEW`: KEYS workers; ARGV worker, lease ms. Renews the worker's deadline (the
/// heartbeat of a shard this worker is not popping from now). Returns nothing.
const RENEW: &str = r"
redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[2]), ARGV[1])
return 1
";

/// `SEED_MARK`: KEYS the crawl's meta hash; ARGV the start key. On a cluster the
/// start key and the meta hash live on different slots, so seeding is two steps: this
/// marks the crawl as seeded (`seeded:<start key>`) and says whether this worker
/// should push (1), then the worker pushes with `SEED` given no meta key. Without a
/// recorded crawl it always says 1.
const SEED_MARK: &str = r"
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('HEXISTS', KEYS[1], 'created') == 1 then
  return redis.call('HSETNX', KEYS[1], 'seeded:' .. ARGV[1], 1)
end
return 1
";

/// `ENQUEUE`: KEYS queue, dupefilter, meta; ARGV mode, layout, filter (`set`,
/// `bloom`, `none`), the number of priority groups G, G pairs of score and request
/// count, then two per request, group after group: the fingerprint (40 hex digits or,
/// where the meta hash says `fingerprints = raw`, their 20 bytes; `block:bit,...` for
/// a Bloom filter; empty for a request not checked, `dont_filter`) and the payload.
/// Native entries of a sorted set or of a single list get a 16-hex-digit sequence
/// prefix from `meta.seq` (one `HINCRBY` reserves the batch's numbers), so equal
/// scores pop in FIFO order and identical requests stay distinct (the lists per
/// priority of mode `p` need none); the new entries go in with one `ZADD` / `LPUSH` per
/// 1,000 values (mode `p`: one `RPUSH` per priority and 1,000 values, one `ZADD` of the
/// priority to the queue's index, the count in `meta.queued`). Returns `{keys
/// repaired, 1|0 per request}` (0 = a duplicate, not stored). A SET dupefilter is
/// asked once per call (`SMISMEMBER`, Redis 6.2; one `SADD` per request on older
/// servers) and the new fingerprints added with one `SADD` per 1,000.
const ENQUEUE: &str = r"
local q, df, meta = KEYS[1], KEYS[2], KEYS[3]
local mode, layout, filter = ARGV[1], ARGV[2], ARGV[3]
local groups = tonumber(ARGV[4]) or 0
local first = 5 + 2 * groups
local nargs = #ARGV
-- Keys of another type are repaired when a command meets them (`call_on`).
local fixed = 0
local out = {0}
local known = nil
if filter == 'set' then
  local fps = {}
  for j = first, nargs, 2 do
    local fp = ARGV[j]
    if fp ~= '' then fps[#fps + 1] = fp end
  end
  if #fps > 0 then
    known = {}
    for c = 1, #fps, 1000 do
      local r = redis.pcall('SMISMEMBER', df, unpack(fps, c, math.min(c + 999, #fps)))
      if type(r) == 'table' and r['err'] and string.find(r['err'], 'WRONGTYPE', 1, true) then
        fixed = fixed + fix_type(df, 'set')
        r = redis.pcall('SMISMEMBER', df, unpack(fps, c, math.min(c + 999, #fps)))
      end
      if type(r) ~= 'table' or r['err'] then
        known = nil
        break
      end
      for k, v in ipairs(r) do
        if v == 1 then known[fps[c + k - 1]] = true end
      end
    end
  end
end
local added = {}
local new_count = 0
if filter == 'set' and not known then fixed = fixed + fix_type(df, 'set') end
local o = 1
for j = first, nargs, 2 do
  local new = 1
  local fp = ARGV[j]
  if fp ~= '' then
    if known then
      if known[fp] then
        new = 0
      else
        known[fp] = true
        added[#added + 1] = fp
      end
    elseif filter == 'set' then
      new = redis.call('SADD', df, fp)
    elseif filter == 'bloom' then
      new = bloom_add(df, fp)
    end
  end
  o = o + 1
  out[o] = new
  new_count = new_count + new
end
for c = 1, #added, 1000 do
  local _, f = call_on(df, 'set', 'SADD', df, unpack(added, c, math.min(c + 999, #added)))
  fixed = fixed + f
end
if new_count > 0 then
  -- A sorted set or a single list of native entries orders them by a sequence
  -- prefix; the lists per priority keep their order themselves.
  local prefixed = layout == 'native' and mode ~= 'p'
  local seq = 0
  if prefixed then
    seq = redis.call('HINCRBY', meta, 'seq', new_count) - new_count
  end
  local batch = {}
  local function push()
    if #batch == 0 then return end
    local _, f
    if mode == 'z' then _, f = call_on(q, 'zset', 'ZADD', q, unpack(batch))
    else _, f = call_on(q, 'list', 'LPUSH', q, unpack(batch)) end
    fixed = fixed + f
    batch = {}
  end
  local j, o = first, 1
  for g = 0, groups - 1 do
    local score, count = ARGV[5 + 2 * g], tonumber(ARGV[6 + 2 * g]) or 0
    if mode == 'p' and not tonumber(score) then score = '0' end
    local l = {}
    for _ = 1, count do
      o = o + 1
      if out[o] == 1 then
        local member = ARGV[j + 1]
        if prefixed then
          seq = seq + 1
          member = string.format('%016x', seq) .. member
        end
        if mode == 'p' then
          l[#l + 1] = member
        else
          if mode == 'z' then batch[#batch + 1] = score end
          batch[#batch + 1] = member
          if #batch >= 1000 then push() end
        end
      end
      j = j + 2
    end
    if #l > 0 then
      local key = plist(q, score)
      for c = 1, #l, 1000 do
        local _, f = call_on(key, 'list', 'RPUSH', key, unpack(l, c, math.min(c + 999, #l)))
        fixed = fixed + f
      end
      local _, f = call_on(q, 'zset', 'ZADD', q, score, score)
      fixed = fixed + f
    end
  end
  push()
  queued(meta, mode, new_count)
end
out[1] = fixed
return out
";

/// `POP`: KEYS queue, workers, this worker's leases, meta; ARGV mode, count, worker,
/// lease ms, lease key prefix, token, holds (`0` when this worker holds leases), renew
/// (`0`: this worker renewed its deadline here lately). Renews this worker's deadline
/// and re-queues the leases of workers whose deadline passed (a heartbeat, count 0,
/// always; a pop when asked), pops up to `count` entries and leases them (`ZPOPMIN`, Redis 5 or later;
/// mode `p`: from the lowest score's list on, `LRANGE` + `LTRIM`, a drained list's
/// score leaving the index).
/// Returns `{-1}` when the meta hash is gone (the database lost the crawl), else
/// `{requeued, queue length, leases, keys repaired, entries...}`. `leases` says
/// whether any worker holds a lease: 0 when none does, else the leases of the first
/// worker found holding some (an `HLEN` per worker until one holds some). It is only
/// looked at when the queue is empty, nothing was popped and the worker holds no
/// lease — the one case the idle check needs it (otherwise some lease is held: the
/// crawl is not idle) — and is `-1` otherwise. A fleet's pops often find the queue
/// drained by the others: counting every worker's leases then cost 256 `HLEN`s per
/// pop with 256 workers.
/// With count 0 it is the heartbeat.
///
/// Idempotent: a pop sent again with the same token (its reply was lost with the
/// connection) finds its leases under the token and returns the same entries instead
/// of leasing more that the worker would never see (if they were taken back
/// meanwhile, it pops anew).
const POP: &str = r"
local q, workers, mine, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local mode, n, me, lease, prefix, token = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
-- Not 1: no crawl recorded, or a key of another type (an error reply).
if redis.pcall('HEXISTS', meta, 'created') ~= 1 then
  return {-1}
end
-- Renewing is a heartbeat's work; a pop renews when the worker asks (each number
-- handed to a command costs the server a `%.17g` formatting: pops pass strings).
local renew = n == 0 or ARGV[8] ~= '0'
local now = 0
if renew then
  now = now_ms()
  redis.call('ZADD', workers, now + lease, me)
end
local out
local count, more = nil, false
local held = redis.call('HGET', mine, token)
local replayed, packed = nil, false
if held then replayed, packed = pop_leases(held) end
if packed then
  -- Sent again (its reply was lost with the connection): the same entries.
  out = {0, 0, 0, 0}
  if replayed then
    for _, v in ipairs(replayed) do
      local m = false
      if type(v) == 'string' and mode == 'p' then
        m = v
      elseif type(v) == 'string' then
        local sp = string.find(v, ' ', 1, true)
        if sp then m = string.sub(v, sp + 1) end
      end
      out[#out + 1] = m
    end
  end
else
  local requeued = 0
  if renew then requeued = reap(q, mode, workers, prefix, now, me) end
  count = queued(meta, mode, requeued)
  -- A pop repairs the queue's type when its first command meets another; a
  -- heartbeat, which pops nothing, checks it.
  local fixed = 0
  if n == 0 then fixed = fix_type(q, qtype(mode)) end
  out = {requeued, 0, 0, 0}
  local vals = {}
  local function take(value, m)
    vals[#vals + 1] = value
    out[#out + 1] = m
  end
  if n > 0 then
    if mode == 'z' then
      local got = redis.pcall('ZPOPMIN', q, n)
      if got['err'] then
        fixed = fixed + fix_type(q, 'zset')
        got = {}
      end
      for i = 1, #got, 2 do take(got[i + 1] .. ' ' .. got[i], got[i]) end
    elseif mode == 'p' then
      local taken = 0
      while taken < n do
        local top = redis.pcall('ZRANGE', q, '0', '0')
        if top['err'] then
          fixed = fixed + fix_type(q, 'zset')
          top = {}
        end
        if #top == 0 then break end
        local score = top[1]
        local key = plist(q, score)
        if not tonumber(score) then
          -- Not a priority (written by something else): kept aside, never dropped.
          redis.call('RPUSH', q .. ':bad', score)
          redis.call('ZREM', q, score)
          fixed = fixed + 1
        else
          local want = n - taken
          local wants = ARGV[2]
          if taken > 0 then wants = tostring(want) end
          local got = redis.pcall('LRANGE', key, '0', wants)
          if got['err'] then
            fixed = fixed + fix_type(key, 'list')
            got = {}
          end
          if #got > want then
            redis.call('LTRIM', key, wants, '-1')
            got[#got] = nil
            more = true
          else
            redis.call('DEL', key)
            redis.call('ZREM', q, score)
          end
          -- The entry (`<score> <record>`) is its lease value.
          for _, m in ipairs(got) do take(m, m) end
          taken = taken + #got
        end
      end
      if taken > 0 then
        local t = ARGV[2]
        if taken < n then t = tostring(taken) end
        count = redis.call('HINCRBY', meta, 'queued', '-' .. t)
      end
    else
      for _ = 1, n do
        local m
        if mode == 'fifo' then m = redis.pcall('RPOP', q) else m = redis.pcall('LPOP', q) end
        if type(m) == 'table' then
          fixed = fixed + fix_type(q, 'list')
          m = false
        end
        if not m then break end
        take('L ' .. m, m)
      end
    end
    if #vals > 0 then redis.call('HSET', mine, token, cmsgpack.pack(vals)) end
  end
  out[4] = fixed
end
out[2] = qlen(q, mode, meta, count, more)
if out[2] == 0 and #out == 4 and ARGV[7] ~= '0' then
  out[3] = leased_any(workers, prefix)
else
  out[3] = -1
end
return out
";

/// `CLOSE`: KEYS workers, this worker's leases, queue, dupefilter, meta; ARGV
/// worker, persist (`1`), mode, lease key prefix, bloom blocks. Puts this worker's
/// unfinished leases back, unregisters it, and — when nothing persists and no other
/// worker is alive — deletes the queue, the dupefilter and the crawl's bookkeeping
/// (the last worker out). Returns `{requeued, other live workers, cleared 1|0}`.
const CLOSE: &str = r"
local workers, mine, q, df, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local me, persist, mode, prefix, blocks = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local requeued = requeue_leases(q, mode, mine)
if redis.call('TYPE', meta)['ok'] == 'hash' then queued(meta, mode, requeued) end
redis.call('DEL', mine, mine .. ':last')
redis.call('ZREM', workers, me)
local live = redis.call('ZCOUNT', workers, '(' .. now_ms(), '+inf')
local cleared = 0
if persist ~= '1' and live == 0 then
  for _, w in ipairs(redis.call('ZRANGE', workers, 0, -1)) do
    redis.call('DEL', prefix .. w, prefix .. w .. ':last')
  end
  del_queue(q, mode)
  redis.call('DEL', workers, df, meta)
  del_bloom(df, blocks)
  cleared = 1
end
return {requeued, live, cleared}
";

/// `RECONCILE`: KEYS this worker's leases; ARGV pairs: a pop whose leases this worker
/// holds (its token) and the places in it acknowledged (`1` per place, as last sent;
/// empty for none). Deletes every other pop's leases (and fields of one lease, written
/// before pops kept one field) and writes the held pops' marks again: a failover may
/// have lost the last acknowledgements. Returns how many leases were deleted.
const RECONCILE: &str = r"
local mine = KEYS[1]
if redis.call('TYPE', mine)['ok'] ~= 'hash' then return 0 end
local keep = {}
for i = 1, #ARGV, 2 do keep[ARGV[i]] = true end
local kv = redis.call('HGETALL', mine)
local gone = {}
local n = 0
for i = 1, #kv, 2 do
  local f, v = kv[i], kv[i + 1]
  local t = f
  if string.sub(f, -2) == ':a' then t = string.sub(f, 1, -3) end
  if not keep[t] then
    gone[#gone + 1] = f
    if t == f then
      local vals = pop_leases(v)
      if vals then n = n + #vals else n = n + 1 end
    end
  end
end
for i = 1, #gone, 1000 do
  redis.call('HDEL', mine, unpack(gone, i, math.min(i + 999, #gone)))
end
for i = 1, #ARGV, 2 do
  local done = ARGV[i + 1] or ''
  if done ~= '' and redis.call('HEXISTS', mine, ARGV[i]) == 1 then
    redis.call('HSET', mine, ARGV[i] .. ':a', done)
  end
end
return n
";

/// `PUSH_LIST`: KEYS list; ARGV values. `RPUSH` after repairing the key's type.
/// Returns `{length, keys repaired}`.
const PUSH_LIST: &str = r"
local fixed = fix_type(KEYS[1], 'list')
return {redis.call('RPUSH', KEYS[1], unpack(ARGV)), fixed}
";

/// `FETCH_START`: KEYS start key; ARGV kind (`list`, `set`, `zset`), count. Takes a
/// batch the way scrapy-redis does (LRANGE+LTRIM from the head, SPOP, or the highest
/// scores of a sorted set). Returns `{keys repaired, remaining, payloads...}`.
const FETCH_START: &str = r"
local key, kind, n = KEYS[1], ARGV[1], tonumber(ARGV[2])
local fixed = fix_type(key, kind)
local got
if kind == 'list' then
  got = redis.call('LRANGE', key, 0, n - 1)
  redis.call('LTRIM', key, n, -1)
elseif kind == 'set' then
  got = redis.call('SPOP', key, n)
else
  got = redis.call('ZREVRANGE', key, 0, n - 1)
  redis.call('ZREMRANGEBYRANK', key, -n, -1)
end
local left
if kind == 'list' then left = redis.call('LLEN', key)
elseif kind == 'set' then left = redis.call('SCARD', key)
else left = redis.call('ZCARD', key) end
local out = {fixed, left}
for _, v in ipairs(got) do out[#out + 1] = v end
return out
";

/// `BLOOM`: KEYS Bloom key prefix; ARGV probes (`block:bit,...`). Checks and sets
/// the bits in one step. Returns 1 when the fingerprint is new, 0 when every bit was
/// already set.
const BLOOM: &str = r"
return bloom_add(KEYS[1], ARGV[1])
";

/// `SEED`: KEYS start key, the crawl's meta hash; ARGV kind (`list`, `set`,
/// `zset`), URLs. Pushes the URLs to the start key once per crawl: the first worker
/// to run marks the meta hash (`seeded:<start key>`); later ones push nothing. Without
/// a meta hash (no Redis scheduler) it always pushes. Returns the URLs pushed.
const SEED: &str = r"
local key, meta, kind = KEYS[1], KEYS[2], ARGV[1]
if redis.call('TYPE', meta)['ok'] == 'hash' and redis.call('HEXISTS', meta, 'created') == 1 then
  if redis.call('HSETNX', meta, 'seeded:' .. key, 1) == 0 then return 0 end
end
fix_type(key, kind)
for i = 2, #ARGV do
  if kind == 'list' then redis.call('RPUSH', key, ARGV[i])
  elseif kind == 'set' then redis.call('SADD', key, ARGV[i])
  else redis.call('ZADD', key, 0, ARGV[i]) end
end
return #ARGV - 1
";

/// `STATS`: KEYS stats hash; ARGV triples `op field value` with op `i` (HINCRBY),
/// `f` (HINCRBYFLOAT), `s` (HSET), `max`, `min` (numeric compare, then HSET). Returns
/// the keys repaired.
const STATS: &str = r"
local key = KEYS[1]
local fixed = fix_type(key, 'hash')
for i = 1, #ARGV, 3 do
  local op, f, v = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if op == 'i' then redis.call('HINCRBY', key, f, v)
  elseif op == 'f' then redis.call('HINCRBYFLOAT', key, f, v)
  elseif op == 's' then redis.call('HSET', key, f, v)
  else
    local cur = tonumber(redis.call('HGET', key, f))
    local new = tonumber(v)
    if cur == nil or (op == 'max' and new > cur) or (op == 'min' and new < cur) then
      redis.call('HSET', key, f, v)
    end
  end
end
return fixed
";

/// `STATS_CLOSE`: KEYS stats hash, workers; ARGV persist. Deletes the stats hash
/// when nothing persists and no worker is alive (the last worker out).
const STATS_CLOSE: &str = r"
if ARGV[1] == '1' then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf') > 0 then return 0 end
redis.call('DEL', KEYS[1])
return 1
";

/// The prelude's functions `body` calls, with the ones they call, in the prelude's
/// order: a script defines only what it uses (each function of the prelude is a
/// closure made on every call of the script).
fn prelude_for(body: &str) -> String {
    let parts: Vec<(&str, &str)> = PRELUDE
        .split("\nlocal function ")
        .filter(|p| !p.trim().is_empty())
        .map(|p| (p.split('(').next().unwrap_or(""), p))
        .collect();
    let calls = |text: &str, name: &str| {
        text.match_indices(&format!("{name}(")).any(|(at, _)| {
            !text[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    let mut wanted: Vec<bool> = parts.iter().map(|(name, _)| calls(body, name)).collect();
    loop {
        let mut grew = false;
        for i in 0..parts.len() {
            if !wanted[i] {
                continue;
            }
            for j in 0..parts.len() {
                if !wanted[j] && calls(parts[i].1, parts[j].0) {
                    wanted[j] = true;
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    let mut out = String::new();
    for ((_, text), want) in parts.iter().zip(wanted) {
        if want {
            out.push_str("\nlocal function ");
            out.push_str(text);
        }
    }
    out.push('\n');
    out
}

/// The scripts, compiled (hashed) once.
#[derive(Debug)]
pub struct Scripts {
    /// See `OPEN`.
    pub open: Script,
    /// See `OPEN_CRAWL`.
    pub open_crawl: Script,
    /// See `SEED_MARK`.
    pub seed_mark: Script,
    /// See `RENEW`.
    pub renew: Script,
    /// See `ENQUEUE`.
    pub enqueue: Script,
    /// See `POP`.
    pub pop: Script,
    /// See `CLOSE`.
    pub close: Script,
    /// See `PUSH_LIST`.
    pub push_list: Script,
    /// See `RECONCILE`.
    pub reconcile: Script,
    /// See `FETCH_START`.
    pub fetch_start: Script,
    /// See `BLOOM`.
    pub bloom: Script,
    /// See `SEED`.
    pub seed: Script,
    /// See `STATS`.
    pub stats: Script,
    /// See `STATS_CLOSE`.
    pub stats_close: Script,
}

thread_local! {
    static SCRIPTS: OnceLock<std::rc::Rc<Scripts>> = const { OnceLock::new() };
}

/// The scripts (one copy per thread).
pub fn scripts() -> std::rc::Rc<Scripts> {
    SCRIPTS.with(|s| {
        s.get_or_init(|| {
            let with = |body: &str| Script::new(&format!("{}{body}", prelude_for(body)));
            std::rc::Rc::new(Scripts {
                open: with(OPEN),
                open_crawl: with(OPEN_CRAWL),
                seed_mark: Script::new(SEED_MARK),
                renew: with(RENEW),
                enqueue: with(ENQUEUE),
                pop: with(POP),
                close: with(CLOSE),
                push_list: with(PUSH_LIST),
                reconcile: with(RECONCILE),
                fetch_start: with(FETCH_START),
                bloom: with(BLOOM),
                seed: with(SEED),
                stats: with(STATS),
                stats_close: Script::new(STATS_CLOSE),
            })
        })
        .clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defines(text: &str, f: &str) -> bool {
        text.contains(&format!("local function {f}("))
    }

    #[test]
    fn a_script_defines_the_prelude_functions_it_calls_and_only_those() {
        let pop = prelude_for(POP);
        for f in [
            "reap",
            "requeue",
            "fix_type",
            "plist",
            "qlen",
            "queued",
            "now_ms",
            "qtype",
            "leased_any",
        ] {
            assert!(defines(&pop, f), "POP lacks {f}");
        }
        for f in ["bloom_add", "del_bloom", "del_queue", "call_on"] {
            assert!(!defines(&pop, f), "POP defines {f}");
        }
        // Called only by a function the script calls: defined, and before it.
        let enqueue = prelude_for(ENQUEUE);
        assert!(defines(&enqueue, "call_on") && defines(&enqueue, "fix_type"));
        assert!(enqueue.find("function fix_type(") < enqueue.find("function call_on("));
        assert!(!defines(&enqueue, "reap"));
        assert_eq!(prelude_for("return 1").trim(), "");
    }
}
