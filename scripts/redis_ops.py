#!/usr/bin/env python3
"""What each of the scheduler's Redis operations costs the server, one at a time.

Starts a `redis-server` on a free port (on the last CPU with --pin, as
`redis_cost.py --pin` does), loads the scheduler's own scripts as they are written
in `src/distributed/scripts.rs`, and times them through `INFO commandstats` (server
CPU inside the command, not the I/O around it):

* ENQUEUE with k new requests per call (k = 1, 4, 16, 64) into a priority queue
  (`--mode p`, the default: a list per priority; `--mode z`: one sorted set, as
  scrapy-redis's layout has it; one priority, native entries): µs per call and per
  request, and the push inside it (`RPUSH` / `ZADD`) per member;
* POP of n entries (n = 0, the heartbeat; 1; 16) from a queue of --queue entries
  over 11 priorities: µs per call and the pop inside it (`LRANGE` + `LTRIM` /
  `ZPOPMIN`) per entry;
* the queue's own commands per entry, a sorted set (`ZADD`, `ZPOPMIN`) against a
  FIFO list (`RPUSH`, `LPOP`);
* the SET dupefilter's lookup (`SMISMEMBER` of 170 members, nearly all present)
  with 40-hex-digit fingerprints and with the same fingerprints as 20 raw bytes, at
  100,000 and 1,000,000 members: µs per fingerprint and bytes per member.

    scripts/redis_ops.py [--pin] [--mode p|z] [--payload 100] [--rounds 2]

The figures say where a page's server time goes; `redis_cost.py` measures whole crawls.
"""

import argparse
import hashlib
import importlib.util
import os
import random
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("redis_cost", os.path.join(HERE, "redis_cost.py"))
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)


# The scripts' source (another commit's copy for comparisons).
SCRIPTS_RS = os.path.join(HERE, "..", "src", "distributed", "scripts.rs")


def script(name):
    """A script's Lua text as `scripts.rs` builds it (the prelude, then the body)."""
    src = open(SCRIPTS_RS).read()

    def const(n):
        m = re.search(r'const %s: &str = r"\n(.*?)\n";' % n, src, re.S)
        if not m:
            sys.exit(f"scripts.rs has no {n}")
        return m.group(1)

    # As `prelude_for` builds it: the prelude's functions the body calls, with the
    # ones they call, in the prelude's order.
    body = const(name)
    if "fn prelude_for" not in src:
        return const("PRELUDE") + "\n" + body
    parts = [p for p in ("\n" + const("PRELUDE")).split("\nlocal function ") if p.strip()]
    names = [p.split("(")[0] for p in parts]

    def calls(text, fn):
        return re.search(r"(?<![A-Za-z0-9_])" + re.escape(fn) + r"\(", text) is not None

    want = [calls(body, fn) for fn in names]
    grew = True
    while grew:
        grew = False
        for i, part in enumerate(parts):
            for j, fn in enumerate(names):
                if want[i] and not want[j] and calls(part, fn):
                    want[j] = grew = True
    return "".join("\nlocal function " + p for p, w in zip(parts, want) if w) + "\n" + body


def usec(r, calls):
    """µs per call of each command since the last RESETSTAT."""
    return {k: u / calls for k, (_, u) in rc.commandstats(r).items()}


def enqueue(r, payload, rounds, mode):
    sha = r.call("SCRIPT", "LOAD", script("ENQUEUE")).decode()
    n = 0
    push = "rpush" if mode == "p" else "zadd"
    print(f"ENQUEUE (new requests, one priority, mode {mode}):")
    print(f"{'k':>5}{'µs/call':>10}{'µs/request':>12}{push.upper() + ' µs/member':>18}"
          f"{'queue after':>13}")
    for _ in range(rounds):
        for k in (1, 4, 16, 64):
            r.call("FLUSHALL")
            r.call("HSET", "q:meta", "created", "1")
            r.call("CONFIG", "RESETSTAT")
            calls = 2000
            for _ in range(calls):
                # One priority group of k requests: fingerprint and payload each.
                args = [mode, "native", "set", "1", "0", str(k)]
                for _ in range(k):
                    n += 1
                    args += [hashlib.sha1(b"%d" % n).hexdigest(), payload]
                r.call("EVALSHA", sha, 3, "q", "q:df", "q:meta", *args)
            u = usec(r, calls)
            print(f"{k:>5}{u['evalsha']:>10.1f}{u['evalsha'] / k:>12.2f}"
                  f"{u.get(push, 0) / k:>18.2f}{calls * k:>13,}")


def pop(r, payload, queue, rounds, mode):
    sha = r.call("SCRIPT", "LOAD", script("POP")).decode()
    inner = ("lrange", "ltrim") if mode == "p" else ("zpopmin",)
    print(f"POP (a queue of {queue:,} entries, 16 other live workers, mode {mode}):")
    print(f"{'n':>5}{'µs/call':>10}{' + '.join(c.upper() for c in inner) + ' µs/entry':>26}")
    for _ in range(rounds):
        r.call("FLUSHALL")
        r.call("HSET", "q:meta", "created", "1")
        for c in range(0, queue, 1000):
            scores = [random.randint(0, 10) for _ in range(c, min(c + 1000, queue))]
            if mode == "p":
                for score in sorted(set(scores)):
                    key = f"q:p:{score}"
                    r.call("RPUSH", key, *[payload for s in scores if s == score])
                    r.call("ZADD", "q", score, score)
            else:
                args = []
                for i, score in zip(range(c, c + len(scores)), scores):
                    args += [score, "%016x" % i + payload]
                r.call("ZADD", "q", *args)
        if mode == "p":
            r.call("HSET", "q:meta", "queued", queue)
        for w in range(16):
            r.call("ZADD", "q:workers", 10**14, f"w{w + 2}")
        for n in (0, 1, 16):
            r.call("CONFIG", "RESETSTAT")
            calls = 2000
            for t in range(calls):
                r.call("EVALSHA", sha, 4, "q", "q:workers", "q:leases:w1", "q:meta", mode, n,
                       "w1", 60000, "q:leases:", f"{n}-{t}", 0)
                if t % 50 == 49:
                    r.call("DEL", "q:leases:w1", "q:leases:w1:last")
            u = usec(r, calls)
            per = sum(u.get(c, 0) for c in inner) / n if n else 0
            print(f"{n:>5}{u['evalsha']:>10.1f}{per:>26.2f}")


def structures(r, payload, queue, rounds):
    """The queue's own commands per entry: the sorted set the priority queue is (`ZADD`
    of 64 at one score, `ZPOPMIN` of 16) against a FIFO list (`RPUSH` of 64, `LPOP` of
    16), each holding --queue entries."""
    print(f"queue structures ({queue:,} entries, µs per entry):")
    print(f"{'structure':>10}{'push':>8}{'pop':>8}")
    for _ in range(rounds):
        for kind in ("zset", "list"):
            r.call("FLUSHALL")
            n = 0
            for c in range(0, queue, 1000):
                members = ["%016x" % (n + i) + payload for i in range(1000)]
                n += 1000
                if kind == "zset":
                    r.call("ZADD", "q", *[x for m in members for x in (0, m)])
                else:
                    r.call("RPUSH", "q", *members)
            r.call("CONFIG", "RESETSTAT")
            calls = 1000
            for _ in range(calls):
                members = ["%016x" % (n + i) + payload for i in range(64)]
                n += 64
                if kind == "zset":
                    r.call("ZADD", "q", *[x for m in members for x in (0, m)])
                    for _ in range(4):
                        r.call("ZPOPMIN", "q", 16)
                else:
                    r.call("RPUSH", "q", *members)
                    for _ in range(4):
                        r.call("LPOP", "q", 16)
            u = usec(r, calls)
            push, pop = ("zadd", "zpopmin") if kind == "zset" else ("rpush", "lpop")
            print(f"{kind:>10}{u[push] / 64:>8.2f}{u[pop] / 64:>8.2f}")


def lookups(r, rounds):
    print("SET dupefilter lookups (SMISMEMBER of 170, nearly all present):")
    print(f"{'members':>10}{'format':>8}{'µs/fingerprint':>16}{'bytes/member':>14}")
    for _ in range(rounds):
        for size in (100_000, 1_000_000):
            for fmt in ("hex", "binary"):
                r.call("FLUSHALL")
                base = int(rc.info(r, "memory")["used_memory"])
                fps = [hashlib.sha1(b"%d" % i).digest() for i in range(size)]
                if fmt == "hex":
                    fps = [f.hex().encode() for f in fps]
                for c in range(0, size, 1000):
                    r.call("SADD", "df", *fps[c:c + 1000])
                per_member = (int(rc.info(r, "memory")["used_memory"]) - base) / size
                r.call("CONFIG", "RESETSTAT")
                calls, batch = 3000, 170
                for _ in range(calls):
                    r.call("SMISMEMBER", "df", *random.sample(fps, batch))
                u = usec(r, calls)
                print(f"{size:>10,}{fmt:>8}{u['smismember'] / batch:>16.3f}{per_member:>14.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pin", action="store_true", help="run redis-server on the last CPU")
    ap.add_argument("--payload", type=int, default=100, help="bytes of each queue entry")
    ap.add_argument("--queue", type=int, default=200_000, help="entries in POP's queue")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mode", choices=("p", "z"), default="p",
                    help="the priority queue: p, a list per priority (trawl's layout); "
                         "z, one sorted set (scrapy-redis's)")
    args = ap.parse_args()
    redis_bin = os.environ.get("TRAWL_REDIS_SERVER") or shutil.which("redis-server")
    if not redis_bin:
        sys.exit("redis-server is needed (apt-get install -y redis-server)")
    if args.pin:
        rc.pin(os.cpu_count())
    tmp = tempfile.mkdtemp(prefix="trawl-redis-ops-")
    port = rc.free_port()
    server = rc.start_server(redis_bin, port, tmp)
    try:
        r = rc.connect(port)
        print(f"redis {rc.info(r, 'server').get('redis_version', '?')}, entries of "
              f"{16 + args.payload} bytes")
        payload = "x" * args.payload
        enqueue(r, payload, args.rounds, args.mode)
        pop(r, payload, args.queue, args.rounds, args.mode)
        structures(r, payload, args.queue, args.rounds)
        lookups(r, args.rounds)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
