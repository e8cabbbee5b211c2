"""Runs Scrapy 2.19's FilesPipeline or ImagesPipeline (Pillow 12.3) on the fixture
site's media section, for tests/media_files.rs and tests/media_images.rs to compare
trawl's with: the spider reads /media/index.html (files) or /media/images.html
(images) and yields one item per `div.item` ({"name", "file_urls" or "image_urls"});
the items (with their `files` / `images`) go to a JSON lines feed, the files to the
store, the stats to a JSON file.

    python scrapy_media.py files|images BASE_URL STORE ITEMS_OUT STATS_OUT [SETTINGS_JSON]

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

KINDS = {
    "files": ("/media/index.html", "file_urls", "scrapy.pipelines.files.FilesPipeline", "FILES_STORE"),
    "images": ("/media/images.html", "image_urls", "scrapy.pipelines.images.ImagesPipeline", "IMAGES_STORE"),
}


class MediaSpider(scrapy.Spider):
    name = "media"

    def __init__(self, base, page, field, **kw):
        super().__init__(**kw)
        self.start_urls = [base + page]
        self.field = field

    def parse(self, response):
        for div in response.css("div.item"):
            yield {
                "name": div.css("h2::text").get(),
                self.field: [response.urljoin(h) for h in div.css("a.file::attr(href)").getall()],
            }


def main():
    kind, base, store, items_out, stats_out = sys.argv[1:6]
    extra = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    assert scrapy.__version__ == "2.19.0", scrapy.__version__
    page, field, pipeline, store_setting = KINDS[kind]
    settings = {
        "ITEM_PIPELINES": {pipeline: 1},
        store_setting: store,
        "FEEDS": {items_out: {"format": "jsonlines", "overwrite": True}},
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
    }
    settings.update(extra)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(MediaSpider)
    process.crawl(crawler, base=base, page=page, field=field)
    process.start()
    stats = {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("file")}
    with open(stats_out, "w") as f:
        json.dump(stats, f)


if __name__ == "__main__":
    main()
