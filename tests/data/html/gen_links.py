#!/usr/bin/env python3
"""Record Scrapy's link extraction and selector results for the HTML corpus.

Usage (from the repository root):

    python3 -m venv /work/venv-ref
    /work/venv-ref/bin/pip install 'scrapy==2.19.*' 'parsel==1.12.*' lxml w3lib
    /work/venv-ref/bin/python tests/data/html/make_pages.py   # only if pages changed
    /work/venv-ref/bin/python tests/data/html/gen_links.py

Reads manifest.json (page file, URL, Content-Type header) and writes
links.json next to this script.  For each page it builds

    scrapy.http.HtmlResponse(url, body=<file bytes>, headers={"Content-Type": ...})

and records:

* encoding           -- response.encoding
* base_url           -- scrapy.utils.response.get_base_url(response)
* links              -- LinkExtractor().extract_links(response)
* links_not_unique   -- LinkExtractor(unique=False).extract_links(response)
  (each link as {"url", "text", "fragment", "nofollow"})
* title              -- response.css("title::text").getall()
* a_href             -- response.css("a::attr(href)").getall()
* a_string           -- response.xpath("//a").xpath("string()").getall()

Any exception raised while computing a field is recorded in that field as
{"error": "<ExceptionType>: <message>"}.  Output is deterministic: cases keep
the manifest order, keys are sorted, UTF-8 with ensure_ascii=False.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_base_url

HERE = Path(__file__).resolve().parent


def versions() -> dict:
    from importlib.metadata import version

    from lxml import etree

    out = {name: version(name) for name in ("scrapy", "parsel", "lxml", "w3lib", "charset-normalizer", "idna")}
    out["libxml2"] = ".".join(map(str, etree.LIBXML_VERSION))
    out["libxml2_compiled"] = ".".join(map(str, etree.LIBXML_COMPILED_VERSION))
    out["python"] = platform.python_version()
    return out


def meta() -> dict:
    freeze = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return {
        "generator": "tests/data/html/gen_links.py",
        "python": platform.python_version(),
        "versions": versions(),
        "pip_freeze": sorted(freeze, key=str.lower),
    }


def err(e: BaseException) -> dict:
    return {"error": f"{type(e).__name__}: {e}"}


def field(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- every failure is data here
        return err(e)


def links(extractor, response) -> list[dict]:
    return [
        {"url": l.url, "text": l.text, "fragment": l.fragment, "nofollow": l.nofollow}
        for l in extractor.extract_links(response)
    ]


def case(entry: dict) -> dict:
    body = (HERE / entry["page"]).read_bytes()
    headers = {} if entry["content_type"] is None else {"Content-Type": entry["content_type"]}
    out = {"page": entry["page"], "url": entry["url"], "content_type": entry["content_type"]}
    try:
        response = HtmlResponse(entry["url"], body=body, headers=headers)
    except Exception as e:  # noqa: BLE001
        out["response"] = err(e)
        return out
    out["encoding"] = field(lambda: response.encoding)
    out["base_url"] = field(lambda: get_base_url(response))
    out["links"] = field(lambda: links(LinkExtractor(), response))
    out["links_not_unique"] = field(lambda: links(LinkExtractor(unique=False), response))
    out["title"] = field(lambda: response.css("title::text").getall())
    out["a_href"] = field(lambda: response.css("a::attr(href)").getall())
    out["a_string"] = field(lambda: response.xpath("//a").xpath("string()").getall())
    return out


def main() -> None:
    manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))["pages"]
    cases = [case(e) for e in manifest]
    data = {"meta": meta(), "count": len(cases), "cases": cases}
    with open(HERE / "links.json", "w", encoding="utf-8", newline="\n") as f:
        json.dump(data, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote links.json with {len(cases)} cases")


if __name__ == "__main__":
    main()
