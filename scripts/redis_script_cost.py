#!/usr/bin/env python3
"""Server instructions of the scheduler's own scripts, one operation at a time.

Starts redis-server under callgrind (valgrind) on a free port, runs a workload of
script calls, shuts it down and reads the instruction total; the same server run
without the calls is subtracted, so what is left is the calls' cost, reading and
writing them included. A count the host's load does not move (two runs agree within
1%), for changes to the Lua in `src/distributed/scripts.rs` too small to see in CPU
time.

    scripts/redis_script_cost.py [--scripts PATH] [--calls 400]

Prints, per call: `ENQUEUE` of 16 new requests (one priority, a SET dupefilter of
20-byte fingerprints), `POP` of 0 (the heartbeat), 1 and 16 entries from the lists per
priority (16 other live workers), and `POP` of 16 with the `HDEL` that acknowledges
them. `--scripts` reads another copy of scripts.rs (an older commit's:
`git show REV:src/distributed/scripts.rs > /tmp/old.rs`); its `ENQUEUE` arguments are
read from the script (four per request before priority groups, two after).
"""

import argparse
import glob
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("redis_cost", os.path.join(HERE, "redis_cost.py"))
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)
_spec = importlib.util.spec_from_file_location("redis_ops", os.path.join(HERE, "redis_ops.py"))
ops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ops)

PAYLOAD = b"\x01" + b"x" * 115


def instructions(work):
    """redis-server's instructions over a run of `work(connection)`."""
    tmp = tempfile.mkdtemp()
    port = rc.free_port()
    srv = rc.start_server("redis-server", port, tmp, callgrind=True)
    for _ in range(300):
        try:
            r = rc.connect(port)
            r.call("PING")
            break
        except Exception:
            time.sleep(0.1)
    else:
        sys.exit("redis-server under callgrind did not answer")
    work(r)
    try:
        r.call("SHUTDOWN", "NOSAVE")
    except Exception:
        pass
    srv.wait()
    total = 0
    for f in glob.glob(os.path.join(tmp, "callgrind.out*")):
        for line in open(f):
            if line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return total


def primitives(calls):
    """What a script's building blocks cost: each one-line script against `return 1`
    (and that against `PING`)."""
    def evals(src, argv=()):
        def work(r):
            r.call("HSET", "h", "created", "1")
            sha = r.call("SCRIPT", "LOAD", src).decode()
            for _ in range(calls):
                r.call("EVALSHA", sha, 1, "h", *argv)
        return work

    def pings(r):
        r.call("HSET", "h", "created", "1")
        for _ in range(calls):
            r.call("PING")

    base = instructions(evals("return 1"))
    print(f"{'EVALSHA of return 1, over PING':<44}{(base - instructions(pings)) / calls:>9,.0f}")
    four = []
    two = []
    for i in range(16):
        fp = hashlib.sha1(b"%d" % i).digest()
        four += ["0", fp, "0", PAYLOAD]
        two += [fp, PAYLOAD]
    src = open(ops.SCRIPTS_RS).read()
    prelude = re.search(r'const PRELUDE: &str = r"\n(.*?)\n";', src, re.S).group(1)
    cases = [
        ("the whole prelude (its functions made)", prelude + "\nreturn 1", ()),
        ("10 redis.call('TIME')", "for i=1,10 do redis.call('TIME') end return 1", ()),
        ("10 redis.call('HGET')", "for i=1,10 do redis.call('HGET', KEYS[1], 'created') end return 1", ()),
        ("10 redis.call('TYPE')", "for i=1,10 do redis.call('TYPE', KEYS[1]) end return 1", ()),
        ("16 concatenations with a number", "local t = {} for i=1,16 do t[i] = 'abc' .. ':' .. i end return 1", ()),
        ("16 concatenations of 116 bytes", "local m = string.rep('y', 116) local t = {} for i=1,16 do t[i] = '0 ' .. m end return 1", ()),
        ("64 arguments (16 x flag, fp, score, payload)", "return 1", four),
        ("32 arguments (16 x fp, payload)", "return 1", two),
    ]
    for label, src, argv in cases:
        print(f"{label:<44}{(instructions(evals(src, argv)) - base) / calls:>9,.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", default=os.path.join(HERE, "..", "src", "distributed", "scripts.rs"))
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--primitives", action="store_true",
                    help="also what one-line scripts cost over `return 1`")
    args = ap.parse_args()
    ops.SCRIPTS_RS = args.scripts
    enqueue_src, pop_src = ops.script("ENQUEUE"), ops.script("POP")
    grouped = "ARGV[4]" in enqueue_src and "groups" in enqueue_src
    calls = args.calls
    seq = [0]

    def fingerprint():
        seq[0] += 1
        return hashlib.sha1(b"%d" % seq[0]).digest()

    def setup(r):
        r.call("HSET", "q:meta", "created", "1", "mode", "p", "layout", "native",
               "fingerprints", "raw")

    def enqueue(r, sha, k):
        if grouped:
            argv = ["p", "native", "set", "1", "0", str(k)]
            for _ in range(k):
                argv += [fingerprint(), PAYLOAD]
        else:
            argv = ["p", "native", "set"]
            for _ in range(k):
                argv += ["0", fingerprint(), "0", PAYLOAD]
        r.call("EVALSHA", sha, 3, "q", "q:df", "q:meta", *argv)

    def filled(r):
        setup(r)
        sha = r.call("SCRIPT", "LOAD", enqueue_src).decode()
        for _ in range(calls):
            enqueue(r, sha, 16)

    # A pop's leases are one field (its token) since the scripts use cmsgpack; one
    # field per entry (`<token>:<place>`) before.
    one_field = "cmsgpack" in pop_src

    def pops(n, ack):
        def work(r):
            filled(r)
            sha = r.call("SCRIPT", "LOAD", pop_src).decode()
            for w in range(16):
                r.call("ZADD", "q:workers", 10**14, f"w{w + 2}")
            for t in range(calls):
                # A pop that does not renew the worker's deadline, as most do (a
                # heartbeat, n = 0, always renews; scripts before ignore the flag).
                got = r.call("EVALSHA", sha, 4, "q", "q:workers", "q:leases:w1", "q:meta",
                             "p", n, "w1", 60000, "q:leases:", str(t + 1), 0, 0)
                if one_field:
                    fields = [str(t + 1)] if len(got) > 4 else []
                else:
                    fields = [f"{t + 1}:{i}" for i in range(1, len(got) - 3)]
                if ack and fields:
                    r.call("HDEL", "q:leases:w1", *fields)
        return work

    if args.primitives:
        primitives(calls)
    base = instructions(setup)
    full = instructions(filled)
    print(f"scripts: {args.scripts}; {calls} calls each")
    print(f"{'ENQUEUE of 16 new requests:':<34}{(full - base) / calls:,.0f} instructions a call")
    for n, ack in ((0, False), (1, False), (16, False), (16, True)):
        got = instructions(pops(n, ack))
        label = f"POP of {n}" + (" + HDEL of its leases" if ack else "")
        print(f"{label + ':':<34}{(got - full) / calls:,.0f} instructions a call")


if __name__ == "__main__":
    main()
