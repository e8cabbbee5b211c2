#!/usr/bin/env python3
"""Record Scrapy's ``deny_extensions`` filter for a grid of link paths and lists.

Usage (from the repository root, in a venv with Scrapy 2.19):

    /tmp/scrapy-venv/bin/python tests/data/urls/gen_extensions.py

For each extension list (``None``: Scrapy's default ``IGNORED_EXTENSIONS``) and each
path, ``LinkExtractor(deny_extensions=...).extract_links`` is asked about a page with
one link, ``<a href="http://example.com{path}">t</a>``: ``denied`` is whether the link
was dropped (Scrapy keeps ``{"." + e}`` as given and tests the lower-cased path,
params and query left out, with ``endswith``).

Writes extensions.json next to this script.
"""

from __future__ import annotations

import json
from pathlib import Path

import scrapy
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor

PATHS = [
    "/a.pdf", "/a.PDF", "/a.Pdf", "/a..pdf", "/a.pdf/", "/dir.pdf/x", "/dir.zip/x",
    "/a.tar.gz", "/a.tar.GZ", "/a.gz", "/archive.tar", "/.zip", "/a.zip/", "/zip",
    "/a.pdf;p=1", "/a;p=1.pdf", "/a.pdf?x=1", "/a?x=.pdf", "/a.pdf#f", "/file.",
    "/file", "/", "", "/a.html", "/x/y.HTML", "/a.b.c", "/a.docx", "/a.xlsx.bak",
    "/caf%C3%A9.pdf", "/a.pdf%20", "/a.7z", "/a.7zip", "/a.jpeg", "/a.JPEG",
]

LISTS = {
    "default": None,
    "pdf": ["pdf"],
    "PDF": ["PDF"],
    "dot_pdf": [".pdf"],
    "tar_gz": ["tar.gz"],
    "slash": ["zip/x", "pdf/"],
    "empty": [""],
    "none": [],
    "several": ["txt", "html", "tar.gz", "c"],
}


def main() -> None:
    cases = []
    for name, exts in LISTS.items():
        extractor = (
            LinkExtractor() if exts is None else LinkExtractor(deny_extensions=exts)
        )
        for path in PATHS:
            url = "http://example.com" + path
            body = f'<html><body><a href="{url}">t</a></body></html>'.encode()
            response = HtmlResponse("http://example.com/page", body=body)
            kept = [link.url for link in extractor.extract_links(response)]
            cases.append(
                {"list": name, "extensions": exts, "url": url, "denied": not kept}
            )
    out = {
        "scrapy": scrapy.__version__,
        "description": "LinkExtractor(deny_extensions=extensions) on a page with one "
        "link to url: whether the link was dropped (extensions null: the default)",
        "cases": cases,
    }
    path = Path(__file__).with_name("extensions.json")
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {path}")


if __name__ == "__main__":
    main()
