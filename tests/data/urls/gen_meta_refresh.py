#!/usr/bin/env python3
"""Record what Scrapy 2.19 finds in the head of a page: the meta refresh
(``scrapy.utils.response.get_meta_refresh``, with ``METAREFRESH_IGNORE_TAGS``'s
default, ``["noscript"]``) and the base URL (``response.urljoin("x")``, which joins to
``get_base_url``), for bodies built around the places a prefilter or a scanner
can go wrong: case, entities, quoted ``>`` and ``<``, comments, raw text,
look-alike tag names, the 4,096-character cut.

    /tmp/scrapy-venv/bin/python tests/data/urls/gen_meta_refresh.py

Writes ``meta_refresh.json`` next to this script. Every expected value comes from
running Scrapy; ``refresh`` is ``null`` where Scrapy finds none, else
``[interval, url]``.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

from scrapy.http import HtmlResponse
from scrapy.settings.default_settings import METAREFRESH_IGNORE_TAGS
from scrapy.utils.response import get_meta_refresh

HERE = Path(__file__).resolve().parent
URL = "http://example.com/dir/page.html"

R = '<meta http-equiv="refresh" content="0; url=/plain">'
PAD = "<p>" + "lorem ipsum dolor " * 300 + "</p>"  # 5,407 characters

HEADS = [
    ("plain", R),
    ("upper case", '<META HTTP-EQUIV="REFRESH" CONTENT="5;URL=/upper">'),
    ("mixed case tag", '<mEtA http-equiv="Refresh" content="1; url=/mixed">'),
    ("entity in http-equiv", '<meta http-equiv="&#82;efresh" content="0; url=/entity">'),
    (
        "entity in http-equiv, refresh elsewhere in the head",
        '<title>refresh</title><meta http-equiv="&#82;efresh" content="0; url=/entity2">',
    ),
    (
        "entity in http-equiv, refresh in the same tag",
        '<meta http-equiv="&#82;efresh" content="0; url=/refresh">',
    ),
    ("named entity in http-equiv", '<meta http-equiv="re&shy;fresh" content="0; url=/shy">'),
    ("entity in content", '<meta http-equiv="refresh" content="0; url=/a&amp;b">'),
    (
        "quoted > before http-equiv",
        '<meta name="a>b" http-equiv="refresh" content="0; url=/gt">',
    ),
    (
        "quoted < before http-equiv",
        '<meta name="a<meta" http-equiv="refresh" content="0; url=/lt">',
    ),
    (
        "refresh only in a quoted value",
        '<meta name="refresh" content="0; url=/name">',
    ),
    ("inside a comment", '<!-- <meta http-equiv="refresh" content="0; url=/comment"> -->'),
    (
        "comment then a real one",
        '<!-- <meta a=" --> <meta http-equiv="refresh" content="0; url=/after"> "-->',
    ),
    (
        "inside a script",
        "<script>var s = '<meta http-equiv=\"refresh\" content=\"0; url=/script\">';</script>",
    ),
    (
        "inside noscript",
        '<noscript><meta http-equiv="refresh" content="0; url=/noscript"></noscript>',
    ),
    (
        "inside a title",
        '<title><meta http-equiv="refresh" content="0; url=/title"></title>',
    ),
    ("look-alike name", '<metadata http-equiv="refresh" content="0; url=/metadata">'),
    ("slash after the name", '<meta/http-equiv="refresh" content="0; url=/slash">'),
    ("unquoted values", "<meta http-equiv=refresh content=0;url=/bare>"),
    ("single quotes", "<meta http-equiv='refresh' content='2; url=/single'>"),
    ("content first", '<meta content="0; url=/first" http-equiv="refresh">'),
    ("http-equiv with spaces", '<meta http-equiv=" refresh " content="0; url=/spaces">'),
    ("http-equiv containing refresh", '<meta http-equiv="x-refresh" content="0; url=/x">'),
    ("comma instead of semicolon", '<meta http-equiv="refresh" content="3, url=/comma">'),
    ("no url", '<meta http-equiv="refresh" content="5">'),
    ("url without url=", '<meta http-equiv="refresh" content="0; /nourl">'),
    (
        "first without url, second with",
        '<meta http-equiv="refresh" content="5"><meta http-equiv="refresh" content="0; url=/second">',
    ),
    ("non-ASCII url", '<meta http-equiv="refresh" content="0; url=/caf\u00e9">'),
    ("unterminated tag", '<meta http-equiv="refresh" content="0; url=/cut"'),
    ("word refresh in text only", "<title>Press refresh</title><meta charset=utf-8>"),
    ("no meta at all", "<title>x</title>"),
    ("after the first 4,096 characters", PAD + R),
    ("straddling the cut", PAD[: 4096 - 20] + R),
    ("base", '<base href="/base/">' + '<meta http-equiv="refresh" content="0; url=rel">'),
    ("upper-case base", '<BASE HREF="http://other.example.org/b/">'),
    ("base in a comment", '<!-- <base href="/commented/"> -->'),
    ("base in a quoted value", '<meta content="<base href=/quoted/>">'),
    (
        "base in a quoted value after a comment trick",
        '<!-- <meta a=" --> <base href="/real/"> "-->',
    ),
    ("base after the first 4,096 characters", PAD + '<base href="/late/">'),
    (
        "a meta inside a quoted value of a meta",
        "<meta name=\"<meta http-equiv=refresh content='0; url=/fake'>\">",
    ),
    (
        "many metas in one quoted value",
        '<meta name="' + "<meta " * 200 + '" http-equiv="refresh" content="0; url=/many">',
    ),
]


def record(name: str, head: str) -> dict:
    body = f"<html><head>{head}</head><body><p>x</p></body></html>"
    response = HtmlResponse(URL, body=body.encode("utf-8"), encoding="utf-8")
    interval, url = get_meta_refresh(response, ignore_tags=METAREFRESH_IGNORE_TAGS)
    return {
        "name": name,
        "body": body,
        "refresh": None if url is None else [interval, url],
        "urljoin_x": response.urljoin("x"),
    }


def main() -> None:
    out = {
        "meta": {
            "url": URL,
            "ignore_tags": list(METAREFRESH_IGNORE_TAGS),
            "versions": {p: version(p) for p in ("scrapy", "w3lib")},
        },
        "cases": [record(name, head) for name, head in HEADS],
    }
    path = HERE / "meta_refresh.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"{len(out['cases'])} cases -> {path}")


if __name__ == "__main__":
    main()
