#!/usr/bin/env python3
"""What one Redis server spends per crawled page of a distributed trawl crawl.

Runs the fixture crawl (`examples/fixture_crawl` with TRAWL_REDIS: one worker of a
scrapy-redis-style crawl, its items and stats in Redis) with N workers against one
local `redis-server`, and reads the server's own accounting around each crawl:

* `INFO commandstats`: calls and microseconds per command. EVALSHA's time includes the
  commands its script runs, which are counted again on their own rows ("inside
  scripts" below): only the top-level rows add up.
* `INFO cpu`: the server's CPU (its main thread's where Redis reports it), which also
  covers reading requests and writing replies.
* With --per-operation, the slow log at threshold 0 (drained every 100 ms), each
  top-level call classified by its keys: ENQUEUE (push + dupefilter), POP (pop +
  lease + heartbeat), ACK (`HDEL` of a lease), ITEMS (the pipeline's `RPUSH` batches), STATS
  (the collector's flushes), START (seed, fetch of start URLs), OPEN/CLOSE.

From the CPU per page: the pages per second one Redis core can schedule.

    cargo build --release --example fixture_crawl --bin trawl
    scripts/redis_cost.py --workers 1,2,4 --pages 20000 [--per-operation]

With --load N,N,... it runs the load generator (`examples/redis_load`: N simulated
workers with trawl's scheduler and pipeline, no fetching) instead of real crawls and
reports scheduled pages/s against N, the server's busy share and its CPU per page;
--svg FILE draws the curve.

    cargo build --release --example redis_load
    scripts/redis_cost.py --load 1,2,4,8,16,32,64,128,256 --pages 20000 --svg benches/redis_ceiling.svg

With --cluster M (and --load) each N runs twice, against one server and against an
M-master Redis Cluster (`redis-cli --cluster create`, no replicas), the crawl sharded
over the masters: the capacity of a cluster is the pages per second of its busiest
master's CPU (the first to saturate), reported against the single server's.

    scripts/redis_cost.py --load 1,4,16,64 --cluster 3 --pages 100000 [--items-shards 3]

With --items-shards N the cluster's workers spread their items over N lists
(`REDIS_ITEMS_SHARDS`) instead of one on one master.

With --fetch-ms MS each simulated page completes 0.5-1.5 × MS after its pop, one at a
time, as a throttled crawl's pages do (0: at once, in bursts); --flush-ms sets
`REDIS_FLUSH_DELAY` (in ms) for the generator's workers.

    scripts/redis_cost.py --load 8,64 --fetch-ms 50 --flush-ms 0 --pages 50000

With --pin, Redis (every server of a cluster) runs on the host's last CPU and the
workers or the generator on the others (`taskset`), as workers on other machines would:
on a small host the load otherwise shares the servers' cores and inflates their CPU per
page (a cluster's three servers most).

With --own-core (and --cluster; implies --pin) each N runs against the cluster once per
master, that master alone on the servers' CPU and the other masters with the clients:
each master's CPU per page is read from the run where it had a core to itself, as a
cluster with a core per master would. (Measured on the 2-core test host: a master
alone spent more CPU per page than the three sharing one core, not less; the figures
in benches/RESULTS.md are --pin's.)

    scripts/redis_cost.py --load 1,4,8,16,64,256 --cluster 3 --items-shards 3 --pages 100000 --own-core

With --instructions (and --load) redis-server runs under callgrind and the figure is
its user-space instructions per page: slow, but a count that the host's speed, which
swings ±30% within an hour here, does not move. It leaves out cache misses (the SET
dupefilter's main cost) and the kernel's work. With --cluster every server runs so, and
the ratio is one server's instructions per page over the busiest master's.

    scripts/redis_cost.py --load 1,8,64,256 --pages 50000 --instructions [--load-bin OLD]
    scripts/redis_cost.py --load 8,16 --cluster 3 --items-shards 3 --pages 50000 --instructions

Needs `redis-server` on the PATH (or TRAWL_REDIS_SERVER), and `redis-cli` for --cluster. Prints a table per N and a
JSON line per N (the last lines) for benches/RESULTS.md.
"""

import argparse
import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


class Redis:
    """A minimal RESP2 client (enough for INFO, CONFIG, SLOWLOG, FLUSHALL)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._reply()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")


def info(r, section):
    text = r.call("INFO", section).decode()
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def commandstats(r):
    stats = {}
    for k, v in info(r, "commandstats").items():
        if not k.startswith("cmdstat_"):
            continue
        fields = dict(kv.split("=") for kv in v.split(","))
        stats[k[len("cmdstat_"):]] = (int(fields["calls"]), int(fields["usec"]))
    return stats


def cpu_seconds(r):
    c = info(r, "cpu")
    if "used_cpu_user_main_thread" in c:
        main = float(c["used_cpu_user_main_thread"]) + float(c["used_cpu_sys_main_thread"])
    else:
        main = None
    total = float(c["used_cpu_user"]) + float(c["used_cpu_sys"])
    return total, main


def user_sys(r):
    """The server's user and system CPU seconds (its main thread's where reported)."""
    c = info(r, "cpu")
    if "used_cpu_user_main_thread" in c:
        return float(c["used_cpu_user_main_thread"]), float(c["used_cpu_sys_main_thread"])
    return float(c["used_cpu_user"]), float(c["used_cpu_sys"])


# Commands trawl's client sends itself; every other row runs inside a script. (RPUSH is
# the items' push; scripts run it only to move a wrong-typed key aside.)
TOP_LEVEL = {"evalsha", "eval", "hdel", "rpush", "script|load", "script", "select", "auth",
             "client|setname", "hello", "ping", "get", "hlen", "zcard", "llen",
             "scard", "del", "info", "config|resetstat", "config|set", "flushall",
             "slowlog|get", "slowlog|reset", "multi", "exec"}
# The driver's own commands, left out of the per-page figures.
DRIVER = {"info", "config|resetstat", "config|set", "flushall", "slowlog|get",
          "slowlog|reset", "multi", "exec", "config", "slowlog"}


def classify(args):
    """The trawl operation a top-level slow-log entry is, from its command and keys."""
    if not args:
        return None
    cmd = args[0].decode(errors="replace").lower()
    if cmd == "hdel":
        return "ACK"
    if cmd == "rpush" and len(args) > 1 and args[1].endswith(b":items"):
        return "ITEMS"
    if cmd != "evalsha" or len(args) < 4:
        return None if cmd in ("slowlog", "multi", "exec", "info", "config") else "OTHER"
    try:
        nkeys = int(args[2])
    except ValueError:
        return "OTHER"
    keys = [a.decode(errors="replace") for a in args[3:3 + nkeys]]
    if nkeys == 3 and keys[2].endswith(":meta"):
        return "ENQUEUE"
    if nkeys == 4 and keys[1].endswith(":workers"):
        return "POP"
    if nkeys == 4 and keys[3].endswith(":workers"):
        return "OPEN"
    if keys and keys[0].endswith(":items"):
        return "ITEMS"
    if keys and keys[0].endswith(":stats"):
        return "STATS"
    if keys and "start_urls" in keys[0]:
        return "START"
    return "OTHER(%d keys)" % nkeys


class SlowlogDrain(threading.Thread):
    """Drains the slow log every 100 ms, summing top-level entries per operation."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.r = Redis(port)
        self.stop = threading.Event()
        self.ops = {}
        self.links = []

    def drain(self):
        self.r.call("MULTI")
        self.r.call("SLOWLOG", "GET", -1)
        self.r.call("SLOWLOG", "RESET")
        got, _ = self.r.call("EXEC")
        for entry in got:
            # [id, time, µs, args, client addr, client name]
            usec, args = entry[2], entry[3]
            addr = entry[4] if len(entry) > 4 else b""
            if addr in (b"?:0", b""):
                continue  # a command run by a script: inside its EVALSHA
            op = classify(args)
            if op is None:
                continue
            calls, total = self.ops.get(op, (0, 0))
            self.ops[op] = (calls + 1, total + usec)
            if op == "ENQUEUE":
                # ARGV: mode, layout, filter, G, G pairs of score and count, then
                # two per request. The slow log keeps 32 arguments, the last one
                # saying how many more there were.
                nkeys = int(args[2])
                total = len(args)
                more = re.match(rb"\.\.\. \((\d+) more arguments\)", args[-1])
                if more:
                    total += int(more.group(1)) - 1
                try:
                    groups = int(args[3 + nkeys + 3])
                    self.links.append((total - 3 - nkeys - 4 - 2 * groups) // 2)
                except (IndexError, ValueError):
                    pass

    def run(self):
        while not self.stop.wait(0.1):
            self.drain()
        self.drain()


# With --pin: the command prefixes that keep Redis on the last CPU and its clients
# (the workers, the load generator, the fixture site) on the others.
SERVER_PIN = []
CLIENT_PIN = []


def pin(cpu_count):
    """Sets the prefixes for --pin (`taskset`), or exits saying why it cannot."""
    if cpu_count is None or cpu_count < 2:
        sys.exit("--pin needs at least 2 CPUs: one for Redis, the rest for its clients")
    taskset = shutil.which("taskset")
    if not taskset:
        sys.exit("--pin needs taskset (util-linux)")
    SERVER_PIN[:] = [taskset, "-c", str(cpu_count - 1)]
    CLIENT_PIN[:] = [taskset, "-c", "0" if cpu_count == 2 else f"0-{cpu_count - 2}"]


def repin(pid, cpus):
    """Moves a running server (every thread of it) onto `cpus`, a `taskset` CPU list."""
    subprocess.run([SERVER_PIN[0], "-a", "-p", "-c", cpus, str(pid)], check=True,
                   stdout=subprocess.DEVNULL)


def run_workers(n, start, bin_path, redis_url, tmp, concurrency):
    procs = []
    for i in range(n):
        env = dict(os.environ, TRAWL_REDIS=redis_url, RUST_LOG="warn")
        out = os.path.join(tmp, f"items-{n}-{i}.jl")
        procs.append(subprocess.Popen(
            CLIENT_PIN + [bin_path, start, str(concurrency), out], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    pages = items = 0
    for p in procs:
        out, err = p.communicate(timeout=1800)
        if p.returncode != 0:
            sys.exit(f"a worker failed:\n{err.decode(errors='replace')[-2000:]}")
        last = json.loads(out.decode().strip().splitlines()[-1])
        pages += last["pages"]
        items += last["items"]
    return pages, items


def connect(port):
    for _ in range(100):
        try:
            r = Redis(port)
            r.call("PING")
            return r
        except OSError:
            time.sleep(0.05)
    sys.exit("redis-server did not start")


def generator_cmd(args, url, n, items_shards=1):
    """The load generator's command line for N workers."""
    cmd = CLIENT_PIN + [args.load_bin, url, str(n), str(args.pages), "17", "4", str(args.prefetch),
           str(items_shards), str(args.fetch_ms)]
    if args.flush_ms is not None:
        cmd.append(str(args.flush_ms))
    return cmd


def run_generator(args, url, n, items_shards=1, timeout=1800):
    """Runs the load generator for N workers; its last JSON line, or exits with its
    error output."""
    p = subprocess.run(generator_cmd(args, url, n, items_shards), capture_output=True,
                       timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"the load generator failed:\n{p.stderr.decode(errors='replace')[-2000:]}")
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def start_server(redis_bin, port, directory, extra=(), callgrind=False):
    """A redis-server on `port` without persistence, its files in `directory` (pinned
    with --pin; under callgrind, its dumps in `directory`, with `callgrind`)."""
    under = ["valgrind", "--tool=callgrind",
             f"--callgrind-out-file={os.path.join(directory, 'callgrind.out')}"] if callgrind else []
    return subprocess.Popen(
        SERVER_PIN + under + [redis_bin, "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", directory, *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def load(args, port):
    """The load generator against one server for each N: pages/s and the server's CPU."""
    r = connect(port)
    version = info(r, "server").get("redis_version", "?")
    url = f"redis://127.0.0.1:{port}/0"
    print(f"load generator: {args.pages} pages, prefetch {args.prefetch}, fetch "
          f"{args.fetch_ms} ms, flush delay {args.flush_ms} ms; redis {version}")
    print(f"{'workers':>8}{'pages/s':>10}{'redis busy':>12}{'µs/page':>10}{'core capacity':>15}")
    results = []
    for n in [int(x) for x in args.load.split(",")]:
        r.call("FLUSHALL")
        r.call("CONFIG", "RESETSTAT")
        cpu0, main0 = cpu_seconds(r)
        t0 = time.time()
        out = run_generator(args, url, n)
        wall = time.time() - t0
        cpu1, main1 = cpu_seconds(r)
        server_cpu = (main1 - main0) if main0 is not None else (cpu1 - cpu0)
        per_page = server_cpu * 1e6 / out["pages"]
        row = {"workers": n, "pages": out["pages"], "seconds": out["seconds"],
               "pages_per_second": out["pages_per_second"],
               "redis_busy": server_cpu / wall, "redis_cpu_us_per_page": per_page,
               "pages_per_core_second": 1e6 / per_page}
        results.append(row)
        print(f"{n:>8}{row['pages_per_second']:>10,.0f}{row['redis_busy']:>11.0%}"
              f"{per_page:>10.1f}{row['pages_per_core_second']:>15,.0f}")
    for row in results:
        print(json.dumps(row))
    if args.svg:
        write_svg(args.svg, results, version)


def callgrind_dump(pid, tmp):
    """Dumps the counters of the server running under callgrind (`callgrind_control
    -d`, which also zeroes them) and returns the instructions since the last dump."""
    before = {f for f in os.listdir(tmp) if f.startswith("callgrind.out")}
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        for f in sorted(set(os.listdir(tmp)) - before):
            if not f.startswith("callgrind.out"):
                continue
            with open(os.path.join(tmp, f), errors="replace") as dump:
                for line in dump:
                    if line.startswith(("totals:", "summary:")):
                        return int(line.split()[1])
        time.sleep(0.1)
    sys.exit("callgrind wrote no dump")


def load_instructions(args, port, pid, tmp):
    """The load generator against one server running under callgrind: the server's
    instructions per page for each N (a count the host's speed does not move; it
    leaves out what cache misses cost)."""
    r = connect(port)
    url = f"redis://127.0.0.1:{port}/0"
    print(f"load generator: {args.pages} pages, prefetch {args.prefetch}, fetch "
          f"{args.fetch_ms} ms; redis-server under callgrind")
    print(f"{'workers':>8}{'instructions/page':>19}")
    for n in [int(x) for x in args.load.split(",")]:
        r.call("FLUSHALL")
        callgrind_dump(pid, tmp)
        out = run_generator(args, url, n, timeout=3600)
        ir = callgrind_dump(pid, tmp)
        print(f"{n:>8}{ir / out['pages']:>19,.0f}")
        print(json.dumps({"workers": n, "pages": out["pages"],
                          "server_instructions_per_page": ir / out["pages"]}))


def cluster_instructions(args, single, masters):
    """Each N against one server, then against the cluster, every server under
    callgrind: instructions per page, and the cluster's capacity as one server's over
    its busiest master's. `single` and `masters` are (port, pid, dump directory)."""
    print(f"load generator: {args.pages} pages, prefetch {args.prefetch}; one server vs "
          f"{len(masters)} masters, every server under callgrind")
    print(f"{'workers':>8}{'server instr/page':>19}{'masters instr/page':>28}{'ratio':>7}")
    for n in [int(x) for x in args.load.split(",")]:
        runs = []
        for servers, shards in (([single], 1), (masters, args.items_shards)):
            for port, pid, d in servers:
                connect(port).call("FLUSHALL")
                callgrind_dump(pid, d)
            url = f"redis://127.0.0.1:{servers[0][0]}/0"
            pages = run_generator(args, url, n, shards, timeout=3600)["pages"]
            runs.append([callgrind_dump(pid, d) / pages for _, pid, d in servers])
        one, per_master = runs[0][0], runs[1]
        ratio = one / max(per_master)
        shown = " / ".join(f"{m:,.0f}" for m in per_master)
        print(f"{n:>8}{one:>19,.0f}{shown:>28}{ratio:>6.2f}×")
        print(json.dumps({"workers": n, "masters": len(masters), "items_shards": args.items_shards,
                          "single_instructions_per_page": one,
                          "master_instructions_per_page": per_master, "ratio": ratio}))


def free_port():
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    return port


def start_cluster(redis_bin, masters, tmp, callgrind=False):
    """`masters` cluster-enabled servers joined by `redis-cli --cluster create` (each
    under callgrind, its dumps in its own directory, with `callgrind`)."""
    ports, procs = [], []
    for _ in range(masters):
        port = free_port()
        while port > 55000:  # the cluster bus listens on port + 10000
            port = free_port()
        d = os.path.join(tmp, f"node-{port}")
        os.makedirs(d)
        procs.append(start_server(
            redis_bin, port, d,
            ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"), callgrind))
        ports.append(port)
    for port in ports:
        connect(port)
    cli = os.environ.get("TRAWL_REDIS_CLI") or "redis-cli"
    subprocess.run([cli, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                    "--cluster-replicas", "0", "--cluster-yes"],
                   check=True, stdout=subprocess.DEVNULL)
    for _ in range(600):
        if all(b"cluster_state:ok" in connect(p).call("CLUSTER", "INFO") for p in ports):
            break
        time.sleep(0.05)
    else:
        sys.exit("the cluster did not reach cluster_state:ok")
    time.sleep(1)
    return ports, procs


def load_run(args, ports, n, items_shards=1):
    """One load-generator run against the servers at `ports` (one, or a cluster's
    masters): the run's JSON, each server's CPU seconds and the wall time. The
    servers' user and system seconds (their main threads') go in the JSON as
    `server_user_sys`."""
    rs = [connect(p) for p in ports]
    for r in rs:
        r.call("FLUSHALL")
        r.call("CONFIG", "RESETSTAT")
    before = [user_sys(r) for r in rs]
    t0 = time.time()
    out = run_generator(args, f"redis://127.0.0.1:{ports[0]}/0", n, items_shards)
    wall = time.time() - t0
    out["server_user_sys"] = [(u1 - u0, s1 - s0)
                              for (u0, s0), (u1, s1) in zip(before, [user_sys(r) for r in rs])]
    cpus = [u + s for u, s in out["server_user_sys"]]
    return out, cpus, wall


def own_core_run(args, cluster_ports, pids, n):
    """The cluster with each master in turn alone on the servers' CPU, the other
    masters moved to the clients' CPUs: a run per master, of which only the master on
    a core of its own is read. Returns the runs' JSON (the first's, with every run's
    pages/s, and each master's user and system seconds from its own run as
    `server_user_sys`) and each master's CPU seconds per page from its own run."""
    server_cpus, client_cpus = SERVER_PIN[2], CLIENT_PIN[2]
    per_master, first, rates, alone = [], None, [], []
    for k, pid in enumerate(pids):
        for j, other in enumerate(pids):
            repin(other, server_cpus if j == k else client_cpus)
        out, cpus, _ = load_run(args, cluster_ports, n, args.items_shards)
        per_master.append(cpus[k] / out["pages"])
        rates.append(out["pages_per_second"])
        alone.append(out["server_user_sys"][k])
        if first is None:
            first = out
    for pid in pids:
        repin(pid, server_cpus)
    first["own_core_pages_per_second"] = rates
    first["server_user_sys"] = alone
    return first, per_master


def cluster_load(args, single_port, cluster_ports, cluster_pids=None):
    """Each N against one server, then against the cluster (with --own-core, once per
    master: see `own_core_run`)."""
    print(f"load generator: {args.pages} pages, prefetch {args.prefetch}; one server vs "
          f"{len(cluster_ports)} masters")
    print(f"{'workers':>8}{'server µs/page':>16}{'capacity':>10}{'cluster µs/page':>17}"
          f"{'busiest':>9}{'capacity':>10}{'ratio':>7}")
    results = []
    for n in [int(x) for x in args.load.split(",")]:
        one, cpus1, _ = load_run(args, [single_port], n)
        single_us = cpus1[0] * 1e6 / one["pages"]
        if args.own_core:
            many, alone = own_core_run(args, cluster_ports, cluster_pids, n)
            per_master = [c * 1e6 for c in alone]
        else:
            many, cpus, _ = load_run(args, cluster_ports, n, args.items_shards)
            per_master = [c * 1e6 / many["pages"] for c in cpus]
        busiest = max(per_master)
        row = {"workers": n, "pages": many["pages"], "masters": len(cluster_ports),
               "items_shards": args.items_shards,
               "single_us_per_page": single_us, "single_capacity": 1e6 / single_us,
               "cluster_us_per_page": sum(per_master),
               "single_user_sys_us_per_page": [x * 1e6 / one["pages"]
                                               for x in one["server_user_sys"][0]],
               "cluster_user_sys_us_per_page": [
                   sum(u for u, _ in many["server_user_sys"]) * 1e6 / many["pages"],
                   sum(s for _, s in many["server_user_sys"]) * 1e6 / many["pages"]],
               "master_us_per_page": per_master, "cluster_capacity": 1e6 / busiest,
               "ratio": single_us / busiest, "own_core": bool(args.own_core),
               "single_pages_per_second": one["pages_per_second"],
               "cluster_pages_per_second": many["pages_per_second"]}
        if args.own_core:
            row["own_core_pages_per_second"] = many["own_core_pages_per_second"]
        results.append(row)
        print(f"{n:>8}{single_us:>16.1f}{1e6 / single_us:>10,.0f}{sum(per_master):>17.1f}"
              f"{busiest:>9.1f}{1e6 / busiest:>10,.0f}{single_us / busiest:>6.2f}×")
    for row in results:
        print(json.dumps(row))
    if args.svg:
        version = info(connect(single_port), "server").get("redis_version", "?")
        write_svg(args.svg, results, version, series=(
            ("single_capacity", "#1f77b4", "one server: pages/s its core could schedule"),
            ("cluster_capacity", "#d62728",
             f"{len(cluster_ports)} masters: pages/s their busiest core could schedule")),
            title=f"redis {version}: one server vs a {len(cluster_ports)}-master cluster, "
                  "trawl's scheduling load")


SINGLE_SERIES = (("pages_per_second", "#1f77b4", "scheduled pages/s"),
                 ("pages_per_core_second", "#d62728",
                  "pages/s one Redis core could schedule (1 / CPU per page)"))


def write_svg(path, rows, version, series=SINGLE_SERIES, title=None):
    """The series (scheduled pages/s and capacities) against N (log2 axis)."""
    import math
    w, h, left, right, top, bottom = 720, 420, 70, 20, 40, 50
    xs = [math.log2(r["workers"]) for r in rows]
    ymax = max(r[key] for r in rows for key, _, _ in series) * 1.1
    title = title or (f"One redis-server {version}: trawl's scheduling load against "
                      "simulated workers")
    xmax = max(xs) or 1

    def px(x):
        return left + (w - left - right) * x / xmax

    def py(y):
        return h - bottom - (h - top - bottom) * y / ymax

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{html.escape(title)}</text>']
    for i in range(6):
        y = ymax * i / 5
        out.append(f'<line x1="{left}" x2="{w - right}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 6}" y="{py(y) + 4:.1f}" '
                   f'text-anchor="end">{y / 1000:.0f}k</text>')
    for r, x in zip(rows, xs):
        out.append(f'<text x="{px(x):.1f}" y="{h - bottom + 18}" text-anchor="middle">'
                   f'{r["workers"]}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
               f'simulated workers (one connection each)</text>')
    for n, (key, colour, label) in enumerate(series):
        pts = " ".join(f"{px(x):.1f},{py(r[key]):.1f}" for r, x in zip(rows, xs))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for r, x in zip(rows, xs):
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(r[key]):.1f}" r="3" fill="{colour}"/>')
        ly = top + 10 + 16 * n
        out.append(f'<line x1="{w - 330}" x2="{w - 310}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                   f'stroke-width="2"/><text x="{w - 305}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--bin", default="target/release/examples/fixture_crawl")
    ap.add_argument("--trawl", default="target/release/trawl")
    ap.add_argument("--load", help="simulated worker counts for the load generator")
    ap.add_argument("--load-bin", default="target/release/examples/redis_load")
    ap.add_argument("--prefetch", type=int, default=16)
    ap.add_argument("--fetch-ms", type=int, default=0,
                    help="with --load: each page completes 0.5-1.5 times this many ms "
                    "after its pop, one at a time (a throttled crawl); 0: at once")
    ap.add_argument("--flush-ms", type=float,
                    help="with --load: REDIS_FLUSH_DELAY in ms (trawl's default if unset)")
    ap.add_argument("--svg", help="with --load: write the curve to this SVG file")
    ap.add_argument("--cluster", type=int, help="with --load: also against a cluster of "
                    "this many masters")
    ap.add_argument("--items-shards", type=int, default=1,
                    help="with --cluster: REDIS_ITEMS_SHARDS for the cluster's runs")
    ap.add_argument("--pin", action="store_true",
                    help="run Redis (every server of a cluster) on the last CPU and its "
                    "clients on the others (taskset), as workers on other machines would "
                    "be: the servers' CPU per page is then not inflated by sharing a core "
                    "with the load")
    ap.add_argument("--own-core", action="store_true",
                    help="with --cluster (implies --pin): each N against the cluster once "
                    "per master, that master alone on the servers' CPU and the others with "
                    "the clients; each master's CPU per page is read from its own run")
    ap.add_argument("--instructions", action="store_true",
                    help="with --load: run redis-server (every server, with --cluster) under "
                    "callgrind and report instructions per page instead of CPU time")
    ap.add_argument("--per-operation", action="store_true",
                    help="also time each operation through the slow log (slower)")
    args = ap.parse_args()
    if args.own_core:
        if not args.cluster or not args.load or args.instructions:
            sys.exit("--own-core goes with --load and --cluster (and not --instructions)")
        args.pin = True
    if args.pin:
        pin(os.cpu_count())
    redis_bin = os.environ.get("TRAWL_REDIS_SERVER") or shutil.which("redis-server")
    if not redis_bin:
        sys.exit("redis-server is needed (apt-get install -y redis-server)")
    tmp = tempfile.mkdtemp(prefix="trawl-redis-cost-")
    port = free_port()
    if args.instructions:
        if not args.load:
            sys.exit("--instructions goes with --load")
        if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
            sys.exit("--instructions needs valgrind (callgrind_control)")
    server = start_server(redis_bin, port, tmp, callgrind=args.instructions)
    if args.load and args.cluster:
        procs = []
        try:
            ports, procs = start_cluster(redis_bin, args.cluster, tmp, args.instructions)
            if args.instructions:
                cluster_instructions(
                    args, (port, server.pid, tmp),
                    [(pt, pr.pid, os.path.join(tmp, f"node-{pt}")) for pt, pr in zip(ports, procs)])
            else:
                cluster_load(args, port, ports, [pr.pid for pr in procs])
        finally:
            for p in procs + [server]:
                p.terminate()
                p.wait()
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if args.load:
        try:
            if args.instructions:
                load_instructions(args, port, server.pid, tmp)
            else:
                load(args, port)
        finally:
            server.terminate()
            server.wait()
            shutil.rmtree(tmp, ignore_errors=True)
        return
    site = subprocess.Popen(
        CLIENT_PIN + [args.trawl, "serve", "--pages", str(args.pages), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = site.stdout.readline().decode()
        start = line.split()[2] if line.startswith("trawl serve:") else None
        if not start:
            sys.exit(f"trawl serve said {line!r}")
        for _ in range(100):
            try:
                r = Redis(port)
                r.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        version = info(r, "server").get("redis_version", "?")
        for n in [int(x) for x in args.workers.split(",")]:
            r.call("FLUSHALL")
            r.call("CONFIG", "RESETSTAT")
            drain = None
            if args.per_operation:
                r.call("CONFIG", "SET", "slowlog-log-slower-than", 0)
                r.call("CONFIG", "SET", "slowlog-max-len", 1000000)
                r.call("SLOWLOG", "RESET")
                drain = SlowlogDrain(port)
                drain.start()
            cpu0, main0 = cpu_seconds(r)
            t0 = time.time()
            pages, items = run_workers(n, start, args.bin, f"redis://127.0.0.1:{port}/0",
                                       tmp, args.concurrency)
            secs = time.time() - t0
            cpu1, main1 = cpu_seconds(r)
            stats = commandstats(r)
            if drain:
                drain.stop.set()
                drain.join()
                r.call("CONFIG", "SET", "slowlog-log-slower-than", 10000)
            cpu = cpu1 - cpu0
            main_cpu = (main1 - main0) if main0 is not None else None
            server_cpu = main_cpu if main_cpu is not None else cpu
            print(f"\n== {n} worker(s): {pages} pages, {items} items in {secs:.1f} s "
                  f"({pages / secs:,.0f} pages/s); redis {version}")
            print(f"{'command':<22}{'calls':>10}{'calls/page':>12}{'µs/call':>10}"
                  f"{'µs/page':>10}  where")
            top_usec = 0
            rows = {}
            for cmd, (calls, usec) in sorted(stats.items(), key=lambda kv: -kv[1][1]):
                if cmd in DRIVER:
                    continue
                inside = cmd not in TOP_LEVEL
                if not inside:
                    top_usec += usec
                rows[cmd] = {"calls_per_page": calls / pages, "us_per_call": usec / calls,
                             "us_per_page": usec / pages, "inside_scripts": inside}
                print(f"{cmd:<22}{calls:>10}{calls / pages:>12.2f}{usec / calls:>10.2f}"
                      f"{usec / pages:>10.2f}  {'inside scripts' if inside else 'top level'}")
            per_page = server_cpu * 1e6 / pages
            print(f"top-level commands: {top_usec / pages:.1f} µs/page; server CPU "
                  f"({'main thread' if main_cpu is not None else 'process'}): "
                  f"{per_page:.1f} µs/page (networking and parsing: "
                  f"{per_page - top_usec / pages:.1f}); one core schedules "
                  f"{1e6 / per_page:,.0f} pages/s")
            ops = {}
            if drain:
                print(f"{'operation':<14}{'calls':>10}{'calls/page':>12}{'µs/call':>10}"
                      f"{'µs/page':>10}")
                for op, (calls, usec) in sorted(drain.ops.items(), key=lambda kv: -kv[1][1]):
                    ops[op] = {"calls_per_page": calls / pages, "us_per_call": usec / calls,
                               "us_per_page": usec / pages}
                    print(f"{op:<14}{calls:>10}{calls / pages:>12.3f}{usec / calls:>10.1f}"
                          f"{usec / pages:>10.2f}")
                if drain.links:
                    print(f"links per ENQUEUE call: {sum(drain.links) / len(drain.links):.1f}")
                print("(slow-log timings at threshold 0 carry its own overhead: compare "
                      "operations with each other, not with the run without it)")
            print(json.dumps({"workers": n, "pages": pages, "items": items, "seconds": secs,
                              "redis_cpu_us_per_page": per_page,
                              "top_level_us_per_page": top_usec / pages,
                              "pages_per_core_second": 1e6 / per_page,
                              "commands": rows, "operations": ops}))
    finally:
        site.terminate()
        server.terminate()
        site.wait()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
