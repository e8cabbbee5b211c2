"""Records Scrapy's response.follow / follow_all with selectors and links, the
LinkExtractor's restrict_xpaths (with restrict_css), and the encoding of pages that
declare none -> follow_selectors.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, parsel==1.12.1,
lxml==6.1.3, CPython 3.11):

    python tests/data/urls/gen_follow_selectors.py

Format: {"versions", "pages": {name: {"url", "body"}}, "follow": [...],
"follow_all": [...], "restrict": [...], "encoding": [...]}.
- follow: {"page", "kind" ("css" | "xpath"), "query", "index", "url"} or "error":
  response.follow(response.<kind>(query)[index]).
- follow_all: {"page", "arg" ("css" | "xpath" | "selectors"), "query", "urls"}:
  response.follow_all(css=query) / (xpath=query) / (response.css(query)), the URL of
  each request in order (a URL Scrapy cannot build ends the list with
  {"error": ...}).
- restrict: {"page", "restrict_xpaths", "restrict_css", "links": [[url, text], ...]}
  from LinkExtractor(restrict_xpaths=..., restrict_css=...).extract_links(response),
  or "error".
- encoding: {"body_hex", "content_type", "encoding", "follow": {href: url or error}}.
"""

import json
import os
import sys

import lxml
import parsel
import scrapy
from scrapy.http import HtmlResponse, TextResponse
from scrapy.linkextractors import LinkExtractor

PAGES = {
    "links": (
        "http://example.com/dir/page.html",
        """<html><head><title>t</title>
<link rel="next" href="/next.html"><link rel="icon">
</head><body>
<div id="nav"><a href="/a.html">A</a> <a href=" b.html ">B</a>
  <a>no href</a> <a href="">empty</a> <a href="mailto:x@example.com">mail</a>
  <a href="javascript:void(0)">js</a></div>
<div class="content"><p>See <a href="c.html?q=caf\u00e9">caf\u00e9</a> and
  <a href="#frag">frag</a>.</p>
  <area href="/area.html"><img src="/img.png">
  <a href="http://other.example.org/x">other</a>
  <span><a href="/nested/d.html">nested <b>bold</b></a></span>
</div>
<div class="content second"><a href="/a.html">A again</a><a href="/e.html">E</a>
  <ul><li><a href="/f.html">F</a></li><li><a href="../g.html">G</a></li></ul></div>
<p class="urls">/text-url.html</p>
<footer><a href="/footer.html">foot</a></footer>
</body></html>""",
    ),
    "base": (
        "http://example.com/x/y.html",
        """<html><head><base href="http://base.example.org/b/"></head><body>
<a href="rel.html">rel</a><a href="/abs.html">abs</a>
<div id="d"><a href="in-div.html">in</a></div></body></html>""",
    ),
}

FOLLOW = [
    ("css", "a", None),
    ("css", "a::attr(href)", None),
    ("xpath", "//a/@href", None),
    ("xpath", "//a", None),
    ("css", "link", None),
    ("css", "link::attr(href)", None),
    ("css", "area", None),
    ("css", "img", None),
    ("css", "img::attr(src)", None),
    ("css", "div", None),
    ("css", "a::text", None),
    ("css", "p.urls::text", None),
    ("xpath", "//p[@class='urls']/text()", None),
    ("xpath", "count(//a)", None),
    ("xpath", "string(//a/@href)", None),
    ("xpath", "//a/@href = '/a.html'", None),
    ("xpath", "re:match(//p[@class='urls'], '/(.*)')", None),
    ("xpath", "//a[@href]/@*", None),
]

FOLLOW_ALL = [
    ("css", "a"),
    ("css", "a::attr(href)"),
    ("css", "#nav a"),
    ("css", "div.content a"),
    ("css", "link, a"),
    ("css", "a, div"),
    ("css", "p.urls::text"),
    ("xpath", "//a"),
    ("xpath", "//a/@href"),
    ("xpath", "//div[@id='nav']//a/@href"),
    ("xpath", "//*[@href]"),
    ("selectors", "a"),
    ("selectors", "div.content a::attr(href)"),
]

RESTRICT = [
    (["//div[@id='nav']"], []),
    (["//div[contains(@class, 'content')]"], []),
    (["//div[@class='content second']", "//div[@id='nav']"], []),
    (["//div[@id='nav']"], ["footer"]),
    (["//footer"], ["#nav", "div.second"]),
    (["//ul"], []),
    (["//span"], []),
    (["//div[@id='nav']/a"], []),
    (["//div[@id='nav']", "//div[@id='nav']"], []),
    (["//body"], []),
    (["//nothing"], []),
    (["//a/@href"], []),
    (["//p[@class='urls']/text()"], []),
    (["/html"], []),
    ([], ["div.content"]),
    (["//div[@id='d']"], []),
    (["id('nav')"], []),
]

ENCODING_BODIES = [
    (b"<html><body><a href='/x'>plain ascii</a></body></html>", "text/html"),
    (b"", "text/html"),
    ("<html><body>caf\u00e9</body></html>".encode("utf-8"), "text/html"),
    ("<html><body>caf\u00e9</body></html>".encode("latin-1"), "text/html"),
    (b"<html><head><meta charset='utf-8'></head><body>ascii</body></html>", "text/html"),
    (b"<html><body>ascii</body></html>", "text/html; charset=utf-8"),
    (b"{\"a\": 1}", "application/json"),
]
ENCODING_HREFS = ["/caf\u00e9?q=\u00e9", "?q=\u20ac", "?q=\u4e2d", "/p?q=x#\u00e9"]


def err(exc):
    return {"error": f"{type(exc).__name__}: {exc}"}


def response(name):
    url, body = PAGES[name]
    return HtmlResponse(url, body=body.encode("utf-8"), encoding="utf-8")


def main():
    out = {
        "versions": {
            "scrapy": scrapy.__version__,
            "parsel": parsel.__version__,
            "lxml": ".".join(map(str, lxml.etree.LXML_VERSION)),
            "libxml2": ".".join(map(str, lxml.etree.LIBXML_VERSION)),
            "python": sys.version.split()[0],
        },
        "pages": {k: {"url": u, "body": b} for k, (u, b) in PAGES.items()},
        "follow": [],
        "follow_all": [],
        "restrict": [],
        "encoding": [],
    }
    for page in PAGES:
        r = response(page)
        for kind, query, _ in FOLLOW:
            sel = getattr(r, kind)(query)
            for index in range(len(sel)):
                case = {"page": page, "kind": kind, "query": query, "index": index}
                try:
                    case["url"] = r.follow(sel[index]).url
                except Exception as exc:  # noqa: BLE001 - a recorded answer
                    case.update(err(exc))
                out["follow"].append(case)
        # A SelectorList is refused.
        case = {"page": page, "kind": "css", "query": "a", "index": None}
        try:
            case["url"] = r.follow(r.css("a")).url
        except Exception as exc:  # noqa: BLE001
            case.update(err(exc))
        out["follow"].append(case)
        for arg, query in FOLLOW_ALL:
            if arg == "selectors":
                gen = r.follow_all(r.css(query))
            else:
                gen = r.follow_all(**{arg: query})
            urls = []
            try:
                for req in gen:
                    urls.append(req.url)
            except Exception as exc:  # noqa: BLE001
                urls.append(err(exc))
            out["follow_all"].append({"page": page, "arg": arg, "query": query, "urls": urls})
        for xpaths, css in RESTRICT:
            case = {"page": page, "restrict_xpaths": xpaths, "restrict_css": css}
            try:
                le = LinkExtractor(restrict_xpaths=xpaths, restrict_css=css)
                case["links"] = [[l.url, l.text] for l in le.extract_links(r)]
            except Exception as exc:  # noqa: BLE001
                case.update(err(exc))
            out["restrict"].append(case)
    for body, ctype in ENCODING_BODIES:
        r = TextResponse(
            "http://example.com/d/p.html", body=body, headers={"Content-Type": ctype}
        )
        follow = {}
        for href in ENCODING_HREFS:
            try:
                follow[href] = r.follow(href).url
            except Exception as exc:  # noqa: BLE001
                follow[href] = err(exc)
        out["encoding"].append(
            {"body_hex": body.hex(), "content_type": ctype, "encoding": r.encoding, "follow": follow}
        )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "follow_selectors.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(
        f"{len(out['follow'])} follow, {len(out['follow_all'])} follow_all, "
        f"{len(out['restrict'])} restrict, {len(out['encoding'])} encoding -> {path}"
    )


if __name__ == "__main__":
    main()
