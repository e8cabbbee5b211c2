"""Runs Scrapy 2.19's FilesPipeline on the fixture site's media section, for
tests/media_files.rs to compare trawl's with: the spider reads /media/index.html and
yields one item per `div.item` ({"name", "file_urls"}); the items (with their `files`)
go to a JSON lines feed, the files to FILES_STORE, the stats to a JSON file.

    python scrapy_files.py BASE_URL FILES_STORE ITEMS_OUT STATS_OUT [SETTINGS_JSON]

Python's `mimetypes` reads only its built-in tables (`knownfiles = []`), as trawl's
file names do (DESIGN.md §15).
"""

import json
import mimetypes
import sys

mimetypes.knownfiles = []
mimetypes.init()

import scrapy  # noqa: E402
from scrapy.crawler import CrawlerProcess  # noqa: E402


class MediaSpider(scrapy.Spider):
    name = "media"

    def __init__(self, base, **kw):
        super().__init__(**kw)
        self.start_urls = [base + "/media/index.html"]

    def parse(self, response):
        for div in response.css("div.item"):
            yield {
                "name": div.css("h2::text").get(),
                "file_urls": [response.urljoin(h) for h in div.css("a.file::attr(href)").getall()],
            }


def main():
    base, store, items_out, stats_out = sys.argv[1:5]
    extra = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    assert scrapy.__version__ == "2.19.0", scrapy.__version__
    settings = {
        "ITEM_PIPELINES": {"scrapy.pipelines.files.FilesPipeline": 1},
        "FILES_STORE": store,
        "FEEDS": {items_out: {"format": "jsonlines", "overwrite": True}},
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
    }
    settings.update(extra)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(MediaSpider)
    process.crawl(crawler, base=base)
    process.start()
    stats = {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("file")}
    with open(stats_out, "w") as f:
        json.dump(stats, f)


if __name__ == "__main__":
    main()
