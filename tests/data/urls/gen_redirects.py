#!/usr/bin/env python3
"""Record where Scrapy 2.19 sends a redirect: the URL of the request that
``RedirectMiddleware`` builds for a ``Location`` header (raw bytes) and that
``MetaRefreshMiddleware`` builds for a ``<meta http-equiv="refresh">`` target,
from a request at a given URL.

    /work/venv-ref/bin/python tests/data/urls/gen_redirects.py

Writes ``redirects.json`` next to this script. Every expected value comes from
running Scrapy's own middlewares (``process_response``); ``null`` means Scrapy
returned the response itself (no redirect) and ``"error: ..."`` that it raised.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.http import HtmlResponse, Request, Response
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

HERE = Path(__file__).resolve().parent

FROM = [
    "http://example.com/a/b/page.html?x=1",
    "https://example.com/dir/",
    "http://example.com:8080/p",
]

LOCATIONS = [
    b"/new",
    b"new",
    b"../up",
    b"../../../../beyond",
    b"//other.example.org/path",
    b"///triple/slash",
    b"https://secure.example.com/x?y=1#frag",
    b"?only=query",
    b"#only-fragment",
    b"path with spaces/x y",
    b"/caf\xc3\xa9?q=\xc3\xa4",
    b"/latin1-\xe4-bytes?q=\xe4",
    b"/a\\b\\c",
    b"/q?x=|&y=^",
    b"HTTP://EXAMPLE.COM/UPPER",
    b"http://user:pw@example.com/cred",
    b"http://example.com:80/default-port",
    b"/%7Euser/%41",
    b"/pct%zz/bad",
    b"  /leading-space",
    b"/trailing-space  ",
    b"http://xn--strae-oqa.de/idna",
    b"http://stra\xc3\x9fe.de/utf8-host",
    b"/semi;params?x#y",
    b"/tab\there",
    b"",
]

REFRESH = [
    "/new",
    "../up",
    "//other.example.org/r",
    "http://example.com/caf\u00e9?q=\u00e4",
    "/a\\b",
    "  spaced.html ",
    "/q?x=|",
    "#frag",
]


def spider():
    return Spider("x")


def redirect_case(mw, url: str, loc: bytes):
    req = Request(url)
    rsp = Response(url, status=302, headers={"Location": loc})
    try:
        out = mw.process_response(req, rsp)
    except Exception as e:  # noqa: BLE001
        return f"error: {type(e).__name__}"
    if out is rsp:
        return None
    return out.url


def refresh_case(mw, url: str, target: str):
    req = Request(url)
    body = f'<html><head><meta http-equiv="refresh" content="0; url={target}"></head></html>'
    rsp = HtmlResponse(url, body=body.encode("utf-8"), encoding="utf-8")
    try:
        out = mw.process_response(req, rsp)
    except Exception as e:  # noqa: BLE001
        return f"error: {type(e).__name__}"
    if out is rsp:
        return None
    return out.url


def main():
    crawler = get_crawler(Spider)
    crawler.spider = spider()
    redirect = RedirectMiddleware.from_crawler(crawler)
    refresh = MetaRefreshMiddleware.from_crawler(crawler)
    cases = []
    for url in FROM:
        for loc in LOCATIONS:
            cases.append(
                {
                    "kind": "location",
                    "from": url,
                    "location_hex": loc.hex(),
                    "to": redirect_case(redirect, url, loc),
                }
            )
        for target in REFRESH:
            cases.append(
                {
                    "kind": "refresh",
                    "from": url,
                    "target": target,
                    "to": refresh_case(refresh, url, target),
                }
            )
    out = {
        "description": "Scrapy's redirect targets (RedirectMiddleware / MetaRefreshMiddleware)",
        "generator": "tests/data/urls/gen_redirects.py",
        "versions": {"scrapy": version("scrapy"), "w3lib": version("w3lib")},
        "count": len(cases),
        "cases": cases,
    }
    (HERE / "redirects.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
