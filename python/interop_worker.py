#!/usr/bin/env python3
"""A Scrapy + scrapy-redis 0.9.1 worker for trawl's Redis interop tests.

    python interop_worker.py --redis-url redis://127.0.0.1:PORT/0 --spider-name NAME \
        [--start URL] [--idle-close SECONDS] [--queue priority|fifo|lifo] \
        [--no-robots] [--no-persist] [--log-level INFO]

The spider is the same as trawl's fixture spider (src/testing/spiders.rs, and the
peer benchmark's shared/bench/scrapy_fixture/fixture_spider.py): it follows every
link that Scrapy's default ``LinkExtractor`` finds (``<a>``/``<area>`` ``href``)
whose host is the host of the page it was found on, and yields one item per
``div.quote``: ``{"url", "text": span.text::text, "author": small.author::text}``.

Redis keys (NAME = --spider-name, scrapy-redis defaults):
  NAME:start_urls   LIST of start payloads read by scrapy_redis.spiders.RedisSpider
  NAME:requests     the shared scheduler queue (ZSET by default; --queue fifo/lifo
                    use a LIST), members serialized by trawl_redis_serializer (JSON)
  NAME:dupefilter   SET of 40-hex request fingerprints
  NAME:items        LIST of items, RPUSHed as ScrapyJSONEncoder JSON text

Start URL: with ``--start URL`` the worker LPUSHes the JSON payload
``{"url": URL}`` onto NAME:start_urls before the crawl starts (the JSON form is
what scrapy-redis 0.9.1 supports without a deprecation warning; it builds
``FormRequest(URL, method="GET", dont_filter=True)``).  Without ``--start`` it
waits for someone else to push to NAME:start_urls (or to NAME:requests).

Stopping: scrapy-redis' RedisSpider raises DontCloseSpider on every
``spider_idle`` signal until MAX_IDLE_TIME_BEFORE_CLOSE (``--idle-close``, default
5 s) has passed since NAME:start_urls was last seen non-empty at an idle moment
(or, if never, since scrapy_redis.spiders was imported); the spider then closes
at the next idle check (the engine re-checks about every 5 s).  "Idle" means no
request in NAME:requests, nothing downloading and nothing being parsed.
SCHEDULER_IDLE_BEFORE_CLOSE is left at 0: it is only a BRPOP/BLPOP timeout for
the fifo/lifo queues, ignored by the priority queue, and blocks the reactor.

robots.txt: obeyed by default (ROBOTSTXT_OBEY=True, as in the fixture spider);
``--no-robots`` turns it off.  SCHEDULER_PERSIST is True by default so the
queue and dupefilter are left in Redis for other workers and for inspection;
``--no-persist`` makes this worker DEL NAME:requests and NAME:dupefilter when it
closes.

At the end one JSON line is printed on stdout:
  {"spider": NAME, "pages": <responses parsed>, "items": <items scraped>,
   "finish_reason": ..., "requests_enqueued": ..., "requests_dequeued": ...}
(the last two count this worker's scheduler/enqueued/redis and
scheduler/dequeued/redis stats).  Exit status 0 iff finish_reason == "finished".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # for SCHEDULER_SERIALIZER = "trawl_redis_serializer"

from scrapy.crawler import CrawlerProcess  # noqa: E402
from scrapy.linkextractors import LinkExtractor  # noqa: E402
from scrapy_redis.connection import get_redis  # noqa: E402
from scrapy_redis.spiders import RedisSpider  # noqa: E402

QUEUES = {
    "priority": "scrapy_redis.queue.PriorityQueue",
    "fifo": "scrapy_redis.queue.FifoQueue",
    "lifo": "scrapy_redis.queue.LifoQueue",
}


class InteropSpider(RedisSpider):
    name = "interop"  # replaced by --spider-name (see make_spider_class)

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.link_extractor = LinkExtractor()
        self.pages = 0

    def parse(self, response):
        self.pages += 1
        for q in response.css("div.quote"):
            yield {
                "url": response.url,
                "text": q.css("span.text::text").get(),
                "author": q.css("small.author::text").get(),
            }
        host = urlsplit(response.url).hostname
        for link in self.link_extractor.extract_links(response):
            if urlsplit(link.url).hostname == host:
                yield response.follow(link, callback=self.parse)


def make_spider_class(name: str) -> type:
    return type("InteropSpider_" + "".join(c if c.isalnum() else "_" for c in name),
                (InteropSpider,), {"name": name})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redis-url", required=True)
    ap.add_argument("--spider-name", required=True)
    ap.add_argument("--start", help="push {\"url\": START} to NAME:start_urls before crawling")
    ap.add_argument("--idle-close", type=int, default=5, help="MAX_IDLE_TIME_BEFORE_CLOSE, seconds (>0)")
    ap.add_argument("--queue", choices=sorted(QUEUES), default="priority")
    ap.add_argument("--no-robots", action="store_true", help="ROBOTSTXT_OBEY=False")
    ap.add_argument("--no-persist", action="store_true", help="SCHEDULER_PERSIST=False (flush on close)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    if args.idle_close <= 0:
        ap.error("--idle-close must be > 0 (0 means never close in scrapy-redis)")

    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        # scrapy_redis.scheduler.Scheduler.from_settings reads DUPEFILTER_CLASS
        # (SCHEDULER_DUPEFILTER_CLASS is never read by 0.9.1).
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_QUEUE_CLASS": QUEUES[args.queue],
        "SCHEDULER_SERIALIZER": "trawl_redis_serializer",
        "SCHEDULER_PERSIST": not args.no_persist,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 0,
        "MAX_IDLE_TIME_BEFORE_CLOSE": args.idle_close,
        "ITEM_PIPELINES": {"scrapy_redis.pipelines.RedisPipeline": 300},
        "REDIS_URL": args.redis_url,
        "ROBOTSTXT_OBEY": not args.no_robots,
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
        "LOG_LEVEL": args.log_level,
        "TELNETCONSOLE_ENABLED": False,
    }

    if args.start:
        server = get_redis(url=args.redis_url)
        server.lpush(f"{args.spider_name}:start_urls", json.dumps({"url": args.start}))
        server.close()

    spidercls = make_spider_class(args.spider_name)
    process = CrawlerProcess(settings, install_root_handler=True)
    crawler = process.create_crawler(spidercls)
    process.crawl(crawler)
    process.start()

    stats = crawler.stats.get_stats()
    summary = {
        "spider": args.spider_name,
        "pages": getattr(crawler.spider, "pages", 0),
        "items": stats.get("item_scraped_count", 0),
        "finish_reason": stats.get("finish_reason"),
        "requests_enqueued": stats.get("scheduler/enqueued/redis", 0),
        "requests_dequeued": stats.get("scheduler/dequeued/redis", 0),
    }
    sys.stdout.write(json.dumps(summary, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0 if summary["finish_reason"] == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())
