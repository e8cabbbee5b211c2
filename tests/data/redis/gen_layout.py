#!/usr/bin/env python3
"""Record what scrapy-redis 0.9.1 really sends to and leaves in Redis.

Usage (from the repository root; redis-server must be on PATH):

    /work/venv-redis/bin/python tests/data/redis/gen_layout.py

Starts its own redis-server on a free 127.0.0.1 port in a temporary directory
(stopped at the end), drives the real scrapy-redis classes against it and
writes layout.json next to this script.  Every Redis command is captured at the
redis-py connection (``send_command`` / ``pack_command`` / ``pack_commands``), so the recorded
``commands`` are the exact argument lists on the wire (MULTI/EXEC included),
each argument decoded as UTF-8.  redis-py's connection handshake (``HELLO 3``,
``CLIENT SETINFO ...``, sent whenever a client first connects) is left out.

Sections of layout.json:
  queues        FifoQueue / LifoQueue / PriorityQueue with SCHEDULER_SERIALIZER
                trawl_redis_serializer (python/): push commands, raw key
                contents (TYPE, LRANGE / ZRANGE WITHSCORES), pop order, pop
                commands (with and without a blocking timeout).
  dupefilter    RFPDupeFilter.request_seen: SADD commands and return values.
  pipeline      RedisPipeline._process_item: the RPUSHed strings.
  start_urls    RedisSpider.next_requests for list / set / zset start keys:
                commands, the Request built from each payload, key left over.
  scheduler     Scheduler open / enqueue / next_request / close with
                SCHEDULER_PERSIST False and True, SCHEDULER_FLUSH_ON_START.
  stats         RedisStatsCollector commands.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent / "python"))

import redis  # noqa: E402
from redis.connection import Connection  # noqa: E402
from scrapy import Request, Spider  # noqa: E402
from scrapy.http import FormRequest  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

import trawl_redis_serializer  # noqa: E402
from scrapy_redis import queue as rqueue  # noqa: E402
from scrapy_redis.dupefilter import RFPDupeFilter  # noqa: E402
from scrapy_redis.pipelines import RedisPipeline  # noqa: E402
from scrapy_redis.scheduler import Scheduler  # noqa: E402
from scrapy_redis.spiders import RedisSpider  # noqa: E402
from scrapy_redis.stats import RedisStatsCollector  # noqa: E402

META = {
    "scrapy-redis": version("scrapy-redis"),
    "scrapy": version("scrapy"),
    "redis-py": version("redis"),
    "w3lib": version("w3lib"),
    "python": platform.python_version(),
}

LOG: list[list[str]] = []


def _arg(a) -> str:
    if isinstance(a, str):
        return a
    if isinstance(a, (bytes, bytearray, memoryview)):
        return bytes(a).decode("utf-8", "backslashreplace")
    if isinstance(a, float):
        return repr(a)
    return str(a)


class RecordingConnection(Connection):
    def send_command(self, *args, **kwargs):
        LOG.append([_arg(a) for a in args])
        return super().send_command(*args, **kwargs)

    def pack_command(self, *args):
        LOG.append([_arg(a) for a in args])
        return super().pack_command(*args)

    def pack_commands(self, commands):
        for c in commands:
            LOG.append([_arg(a) for a in c])
        return super().pack_commands(commands)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class RedisServer:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="trawl-redis-gen-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{self.port}/0"
        for _ in range(100):
            try:
                redis.Redis.from_url(self.url).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            raise RuntimeError("redis-server did not start")
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class DemoSpider(Spider):
    name = "demo"

    def parse(self, response):
        pass

    def parse_item(self, response, **kw):
        pass


class DemoRedisSpider(RedisSpider):
    name = "rdemo"

    def parse(self, response):
        pass


SETTINGS: dict = {}  # filled in main(): REDIS_URL, REDIS_PARAMS


def crawler_for(spidercls, **extra):
    return get_crawler(spidercls, {**SETTINGS, **extra})


def recorded(fn):
    """Run fn(); return (result, the commands it sent)."""
    LOG.clear()
    result = fn()
    # Drop redis-py's own connection handshake (HELLO 3, CLIENT SETINFO ...,
    # sent when a client first connects); it is not scrapy-redis behaviour.
    cmds = [c for c in LOG if c[0].upper() not in ("HELLO", "CLIENT")]
    LOG.clear()
    return result, cmds


def raw_state(r: redis.Redis, key: str) -> dict:
    t = r.type(key).decode()
    out = {"key": key, "type": t}
    if t == "list":
        out["lrange"] = [v.decode() for v in r.lrange(key, 0, -1)]
    elif t == "zset":
        out["zrange_withscores"] = [[m.decode(), s] for m, s in r.zrange(key, 0, -1, withscores=True)]
    elif t == "set":
        out["smembers_sorted"] = sorted(v.decode() for v in r.smembers(key))
    elif t == "hash":
        out["hgetall"] = {k.decode(): v.decode() for k, v in sorted(r.hgetall(key).items())}
    return out


def req_summary(req) -> dict:
    return {
        "class": f"{type(req).__module__}.{type(req).__name__}",
        "url": req.url,
        "method": req.method,
        "headers": [[k.decode(), [v.decode() for v in vs]] for k, vs in req.headers.items()],
        "body": req.body.decode("utf-8", "backslashreplace"),
        "meta": req.meta,
        "priority": req.priority,
        "dont_filter": req.dont_filter,
        "callback": req.callback if req.callback is None else getattr(req.callback, "__name__", str(req.callback)),
    }


def queue_requests(spider):
    return [
        Request("http://h.test/a", callback=spider.parse, priority=0),
        Request("http://h.test/b", callback=spider.parse_item, priority=5, meta={"depth": 1}),
        Request("http://h.test/c", priority=-3, method="POST", body=b"x=1\xff",
                headers={"Content-Type": "application/x-www-form-urlencoded"}),
        Request("http://h.test/d", priority=5, dont_filter=True, cb_kwargs={"k": "v"}),
        Request("http://h.test/e", priority=0, flags=["f"], cookies={"s": "1"}),
    ]


def gen_queues(r):
    out = {}
    crawler = crawler_for(DemoSpider)
    spider = DemoSpider.from_crawler(crawler)
    for cls_name in ("FifoQueue", "LifoQueue", "PriorityQueue"):
        cls = getattr(rqueue, cls_name)
        q = cls(server=r, spider=spider, key="%(spider)s:requests", serializer=trawl_redis_serializer)
        r.delete(q.key)
        pushes = []
        for req in queue_requests(spider):
            _, cmds = recorded(lambda: q.push(req))
            pushes.append({"url": req.url, "priority": req.priority, "commands": cmds})
        state = raw_state(r, q.key)
        _, len_cmds = recorded(lambda: len(q))
        pops = []
        while True:
            req, cmds = recorded(lambda: q.pop())
            pops.append({"url": req.url if req else None, "commands": cmds})
            if req is None:
                break
        # A blocking pop (timeout = SCHEDULER_IDLE_BEFORE_CLOSE) on a filled queue.
        q.push(Request("http://h.test/z"))
        req, bcmds = recorded(lambda: q.pop(timeout=1))
        r.delete(q.key)
        out[cls_name] = {
            "class": f"scrapy_redis.queue.{cls_name}",
            "key": q.key,
            "push": pushes,
            "state_after_push": state,
            "len_commands": len_cmds,
            "pop_order": [p["url"] for p in pops],
            "pop": pops,
            "pop_with_timeout_1": {"url": req.url if req else None, "commands": bcmds},
        }
    return out


def gen_dupefilter(r):
    crawler = crawler_for(DemoSpider)
    spider = DemoSpider.from_crawler(crawler)
    df = RFPDupeFilter.from_spider(spider)
    r.delete(df.key)
    calls = []
    for req in (
        Request("http://h.test/p?b=2&a=1"),
        Request("http://h.test/p?a=1&b=2#frag"),
        Request("http://h.test/p?a=1&b=2", headers={"X": "y"}),
        Request("http://h.test/p?a=1&b=2", method="POST"),
        Request("http://h.test/p?a=1&b=2", method="POST", body=b"k=v"),
    ):
        seen, cmds = recorded(lambda: df.request_seen(req))
        calls.append({"url": req.url, "method": req.method, "body": req.body.decode(),
                      "headers": [[k.decode(), [v.decode() for v in vs]] for k, vs in req.headers.items()],
                      "seen": seen, "commands": cmds})
    state = raw_state(r, df.key)
    _, clear_cmds = recorded(lambda: df.close("finished"))
    return {"key": df.key, "request_seen": calls, "state": state, "close_commands": clear_cmds}


def gen_pipeline(r):
    crawler = crawler_for(DemoSpider)
    spider = DemoSpider.from_crawler(crawler)
    pipe = RedisPipeline.from_crawler(crawler)
    items = [
        {"url": "http://h.test/", "text": "\u201cQuote \u00e9 \u65e5\u672c\u201d", "author": "Ann"},
        {"n": 1, "f": 1.5, "none": None, "bool": True, "list": [1, "a"], "nested": {"b": 2, "a": 1}},
        {"decimal": Decimal("1.10"), "dt": datetime(2024, 1, 2, 3, 4, 5), "set": {"only"}},
    ]
    out = []
    for item in items:
        _, cmds = recorded(lambda: pipe._process_item(item, spider))
        out.append({"item_repr": repr(item), "commands": cmds})
    key = pipe.item_key(items[0], spider)
    state = raw_state(r, key)
    r.delete(key)
    return {"key": key, "process_item": out, "state": state}


START_PAYLOADS = [
    "http://h.test/plain",
    '{"url": "http://h.test/json"}',
    '{"url": "http://h.test/meta", "meta": {"job": "1"}}',
    '{"url": "http://h.test/post", "method": "post", "a": "1", "b": "x y"}',
    '{"url": "http://h.test/get?x=0", "c": "2"}',
    '{"nourl": "x"}',
]


def gen_start_urls(r):
    out = {}
    for mode, extra in (("list", {}), ("set", {"REDIS_START_URLS_AS_SET": True}),
                        ("zset", {"REDIS_START_URLS_AS_ZSET": True})):
        crawler = crawler_for(DemoRedisSpider, CONCURRENT_REQUESTS=4, **extra)
        spider = DemoRedisSpider.from_crawler(crawler)
        key = spider.redis_key
        r.delete(key)
        if mode == "list":
            # RPUSH keeps the payload order head-to-tail.
            r.rpush(key, *START_PAYLOADS)
        elif mode == "set":
            r.sadd(key, *START_PAYLOADS)
        else:
            r.zadd(key, {p: i for i, p in enumerate(START_PAYLOADS)})
        batches = []
        while True:
            reqs, cmds = recorded(lambda: list(spider.next_requests()))
            batches.append({
                "commands": cmds,
                "requests": sorted((req_summary(x) for x in reqs), key=lambda d: d["url"])
                if mode == "set" else [req_summary(x) for x in reqs],
            })
            if not cmds or r.exists(key) == 0:
                break
        if mode == "set":
            # SPOP picks at random: keep the command shape, not the random pick.
            for b in batches:
                b["requests_count"] = len(b.pop("requests"))
        out[mode] = {
            "key": key,
            "batch_size": spider.redis_batch_size,
            "pushed": START_PAYLOADS,
            "batches": batches,
            "key_exists_after": bool(r.exists(key)),
        }
    # make_request_from_data on individual payloads (no Redis involved).
    crawler = crawler_for(DemoRedisSpider)
    spider = DemoRedisSpider.from_crawler(crawler)
    single = []
    for payload in START_PAYLOADS + ['123', '"http://h.test/jsonstring"', '{"url": null}',
                                     '{"url": "http://h.test/f", "meta": {"a": [1]}, "method": "GET", "n": 5}']:
        try:
            res = spider.make_request_from_data(payload.encode())
            if isinstance(res, list):
                got = {"returned": "list", "requests": [req_summary(x) for x in res]}
            else:
                got = {"returned": "request", "request": req_summary(res)}
        except Exception as e:  # noqa: BLE001
            got = {"error": type(e).__name__}
        single.append({"payload": payload, **got})
    out["make_request_from_data"] = single
    return out


def gen_scheduler(r):
    out = {}
    for persist in (False, True):
        crawler = crawler_for(DemoSpider, SCHEDULER_PERSIST=persist,
                              DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter",
                              SCHEDULER_SERIALIZER="trawl_redis_serializer")
        spider = DemoSpider.from_crawler(crawler)
        crawler.spider = spider
        sched = Scheduler.from_crawler(crawler)
        _, open_cmds = recorded(lambda: sched.open(spider))
        enq = []
        for req in (Request("http://h.test/1"), Request("http://h.test/1"),
                    Request("http://h.test/1", dont_filter=True)):
            ok, cmds = recorded(lambda: sched.enqueue_request(req))
            enq.append({"url": req.url, "dont_filter": req.dont_filter, "enqueued": ok, "commands": cmds})
        nreq, next_cmds = recorded(lambda: sched.next_request())
        has, has_cmds = recorded(lambda: sched.has_pending_requests())
        keys_before = sorted(k.decode() for k in r.keys("demo:*"))
        _, close_cmds = recorded(lambda: sched.close("finished"))
        keys_after = sorted(k.decode() for k in r.keys("demo:*"))
        for k in keys_after:
            r.delete(k)
        out[f"persist_{str(persist).lower()}"] = {
            "open_commands": open_cmds,
            "enqueue": enq,
            "next_request": {"url": nreq.url if nreq else None, "commands": next_cmds},
            "has_pending_requests": {"result": has, "commands": has_cmds},
            "keys_before_close": keys_before,
            "close_commands": close_cmds,
            "keys_after_close": keys_after,
        }
    # SCHEDULER_FLUSH_ON_START
    crawler = crawler_for(DemoSpider, SCHEDULER_FLUSH_ON_START=True,
                          DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter")
    spider = DemoSpider.from_crawler(crawler)
    sched = Scheduler.from_crawler(crawler)
    _, cmds = recorded(lambda: sched.open(spider))
    out["flush_on_start_open_commands"] = cmds
    # Default DUPEFILTER_CLASS (Scrapy's own) with the scrapy-redis scheduler.
    try:
        Scheduler.from_crawler(crawler_for(DemoSpider))
        out["default_dupefilter_class"] = "ok"
    except Exception as e:  # noqa: BLE001
        out["default_dupefilter_class"] = {"error": type(e).__name__, "message": str(e)}
    return out


def gen_stats(r):
    crawler = crawler_for(DemoSpider, SCHEDULER_PERSIST=False)
    spider = DemoSpider.from_crawler(crawler)
    stats = RedisStatsCollector(crawler)
    steps = []
    for name, fn in (
        ("open_spider", lambda: stats.open_spider(spider)),
        ("inc_value new", lambda: stats.inc_value("item_scraped_count")),
        ("inc_value existing", lambda: stats.inc_value("item_scraped_count", 2)),
        ("set_value str", lambda: stats.set_value("finish_reason", "finished")),
        ("set_value datetime", lambda: stats.set_value(
            "start_time", datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc))),
        ("get_value", lambda: stats.get_value("item_scraped_count")),
        ("max_value", lambda: stats.max_value("m", 7)),
    ):
        res, cmds = recorded(fn)
        steps.append({"step": name, "result": res, "commands": cmds})
    state = raw_state(r, stats._get_key(spider))
    _, close_cmds = recorded(lambda: stats.close_spider(spider, "finished"))
    return {"key": stats._get_key(spider), "steps": steps, "state": state,
            "close_spider_commands_persist_false": close_cmds}


def main():
    with RedisServer() as srv:
        SETTINGS.update({
            "REDIS_URL": srv.url,
            "REDIS_PARAMS": {"connection_class": RecordingConnection},
        })
        r = redis.Redis.from_url(srv.url, connection_class=RecordingConnection)
        r.ping()  # connect (handshake) before anything is recorded
        doc = {
            "description": "Redis commands and key contents produced by scrapy-redis 0.9.1 classes "
                           "(see the module docstring of the generator).",
            "generator": "tests/data/redis/gen_layout.py",
            "meta": META,
            "queues": gen_queues(r),
            "dupefilter": gen_dupefilter(r),
            "pipeline": gen_pipeline(r),
            "start_urls": gen_start_urls(r),
            "scheduler": gen_scheduler(r),
            "stats": gen_stats(r),
        }
        leftover = sorted(k.decode() for k in r.keys("*"))
    doc["keys_left_at_end"] = leftover
    text = json.dumps(doc, indent=1, ensure_ascii=False, default=repr)
    # The redis port appears nowhere in the recorded commands; check anyway.
    assert str(srv.port) not in text
    path = HERE / "layout.json"
    path.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
