#!/usr/bin/env python3
"""Record which meta keys a downloader middleware's ``process_response`` sees.

Usage (from the repository root; needs Scrapy 2.19 installed in that Python):

    /work/venv-ref/bin/python tests/data/middlewares/record_response_meta.py

Writes ``response_meta.json`` next to this script. A real Scrapy crawl (default
settings, ``ROBOTSTXT_OBEY`` off as in Scrapy's defaults) against a local HTTP server
on 127.0.0.1 fetches ``/status/200`` (a start request) and, from its callback,
``/status/200?next=1``, and a start request to a port nothing listens on. A downloader middleware at order 950 (the closest to the
downloader of the stock ones) records, in ``process_response``:

the sorted keys of ``request.meta`` — and, in ``process_exception``, those of the refused
request's first failure (in Scrapy the request every middleware sees is
the one object the downloader and the handler wrote to: ``download_slot`` and
``download_latency`` are on it).

The callback records the sorted keys of ``response.meta``. Values that vary from run
to run (latency, slot names with a port) are not recorded, only the keys; the output
is written with sorted keys, so re-running gives identical bytes.
"""

from __future__ import annotations

import json
import platform
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import scrapy
from scrapy.crawler import CrawlerProcess

OUT = Path(__file__).with_name("response_meta.json")
SEEN: dict[str, dict] = {}


def page_key(url: str) -> str:
    """The URL after ``scheme://host:port/``: the recording's page key."""
    return url.split("/", 3)[3]


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b"status 200\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class RecordingMiddleware:
    def process_exception(self, request, exception, spider):
        # The first failure of the refused request only (retries add retry_times).
        key = page_key(request.url)
        SEEN.setdefault(key, {}).setdefault(
            "process_exception_meta_keys", sorted(request.meta)
        )

    def process_response(self, request, response, spider):
        key = page_key(request.url)
        SEEN.setdefault(key, {})["process_response_meta_keys"] = sorted(request.meta)
        return response


class MetaSpider(scrapy.Spider):
    name = "meta"

    def __init__(self, base, refused, **kw):
        super().__init__(**kw)
        self.base = base
        self.refused = refused

    async def start(self):
        yield scrapy.Request(f"{self.base}/status/200")
        yield scrapy.Request(self.refused, errback=self.failed)
        # Not retried: the errback gets the request of the one attempt.
        yield scrapy.Request(
            f"{self.refused}?dont_retry=1", errback=self.failed, meta={"dont_retry": True}
        )

    def failed(self, failure):
        # The request the errback gets: in Scrapy, the one object the middlewares, the
        # downloader and the retry middleware's last copy wrote to.
        key = page_key(failure.request.url)
        SEEN.setdefault(key, {})["errback_meta_keys"] = sorted(failure.request.meta)

    def parse(self, response):
        key = page_key(response.url)
        SEEN.setdefault(key, {})["callback_meta_keys"] = sorted(response.meta)
        if "next" not in response.url:
            yield scrapy.Request(f"{self.base}/status/200?next=1")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    process = CrawlerProcess(
        settings={
            "LOG_LEVEL": "ERROR",
            "DOWNLOADER_MIDDLEWARES": {f"{__name__}.RecordingMiddleware": 950},
            "TELNETCONSOLE_ENABLED": False,
        }
    )
    # A port nothing listens on: bound, then closed.
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    refused = f"http://127.0.0.1:{probe.getsockname()[1]}/refused"
    probe.close()
    process.crawl(MetaSpider, base=base, refused=refused)
    process.start()
    server.shutdown()
    OUT.write_text(
        json.dumps(
            {
                "description": "meta keys a downloader middleware's process_response and the callback see (Scrapy, real crawl)",
                "generator": "tests/data/middlewares/record_response_meta.py",
                "middleware_order": 950,
                "pages": SEEN,
                "versions": {
                    "python": platform.python_version(),
                    "scrapy": scrapy.__version__,
                },
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
