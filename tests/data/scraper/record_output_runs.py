#!/usr/bin/env python3
"""Record how far Scrapy's scraper reads a callback's output ahead of scheduling.

Usage (needs Scrapy 2.19 installed in that Python; no network is used: the start
request is a ``data:`` URL and the yielded requests are only scheduled, the spider
closes at the first one):

    /tmp/scrapy-venv/bin/python tests/data/scraper/record_output_runs.py

Writes ``output_runs.json`` next to this script: for each ``CONCURRENT_ITEMS``, how
many requests a lazy callback (a generator of 100,000 requests) had produced when the
first of them reached ``request_scheduled``. With the default asyncio reactor Scrapy's
scraper fills a queue of ``2 * CONCURRENT_ITEMS`` from the output
(``scrapy.utils.asyncio._parallel_asyncio``) before its workers schedule them.
Each setting runs in its own process (a reactor does not restart).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import json, sys
import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess

produced = 0
result = {}

class S(scrapy.Spider):
    name = "s"
    custom_settings = {"LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": False}

    async def start(self):
        yield scrapy.Request("data:,hello", callback=self.parse)

    def parse(self, response):
        global produced
        for i in range(100_000):
            produced += 1
            yield scrapy.Request(f"http://b.test/{i}")

    @classmethod
    def from_crawler(cls, crawler, *a, **kw):
        s = super().from_crawler(crawler, *a, **kw)
        crawler.signals.connect(s.scheduled, signal=signals.request_scheduled)
        return s

    def scheduled(self, request, spider):
        if request.url.startswith("http://b.test/") and "first" not in result:
            result["first"] = produced
            self.crawler.engine.close_spider(self, "done")

ci = int(sys.argv[1])
p = CrawlerProcess({"CONCURRENT_ITEMS": ci})
p.crawl(S)
p.start()
print(json.dumps(result.get("first")))
'''


def main() -> None:
    import scrapy

    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        # A file, not `-c`: Scrapy reads the callback's source (a generator's
        # `return` check).
        child = Path(tmp) / "child.py"
        child.write_text(CHILD)
        outs = [
            subprocess.run(
                [sys.executable, str(child), str(ci)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for ci in (100, 10, 1)
        ]
    for ci, out in zip((100, 10, 1), outs):
        first = json.loads(out.strip().splitlines()[-1])
        cases.append({"CONCURRENT_ITEMS": ci, "produced_at_first_schedule": first})
    doc = {"scrapy": scrapy.__version__, "cases": cases}
    path = Path(__file__).with_name("output_runs.json")
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(path.read_text())


if __name__ == "__main__":
    main()
