#!/usr/bin/env python3
"""Record Scrapy's LinkExtractor URLs for the odd hrefs of gen_urls.py.

Usage (from the repository root, in the reference venv of gen_urls.py):

    /work/venv-ref/bin/python tests/data/urls/gen_linkextract.py

For each base page of gen_urls.py (UTF-8, latin-1, cp1251, iso-8859-15, shift_jis, a
``<base href>``) and each odd href of gen_urls.py, a page is built with that one link

    <a href="{html-escaped href}">t</a>

in the page's encoding (characters it cannot encode as character references, which
lxml decodes back), and Scrapy 2.19 is asked for:

* ``links``   -- ``LinkExtractor().extract_links(response)``: each link's ``url``
* ``request`` -- ``Request(link.url).url`` for each of them (what a spider following
  the link would request), or the error Scrapy raises
* ``canon``   -- ``LinkExtractor(canonicalize=True).extract_links(response)`` URLs

and, per base, one page holding every href in order (``all`` cases: the default
extractor's ``unique=True`` dedupe and order over all of them).

Writes linkextract.json next to this script. An exception is recorded as
{"error": "<ExceptionType>: <message>"}.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_urls import BASES, HREFS, dedup, err, meta, write  # noqa: E402


def page(base: dict, hrefs: list[str], encoding: str) -> bytes:
    links = "".join(f'<a href="{html.escape(h, quote=True)}">t</a>\n' for h in hrefs)
    head, _, tail = base["body"].partition("<body>")
    text = f"{head}<body>{links}{tail}"
    return text.encode(encoding, errors="xmlcharrefreplace")


def extract(response, **kwargs) -> list | dict:
    try:
        return [link.url for link in LinkExtractor(**kwargs).extract_links(response)]
    except Exception as e:  # noqa: BLE001
        return err(e)


def requests(urls) -> list | dict:
    if isinstance(urls, dict):
        return urls
    out = []
    for u in urls:
        try:
            out.append(Request(u).url)
        except Exception as e:  # noqa: BLE001
            out.append(err(e))
    return out


# One page, several extractors: Scrapy's filters (the Rust test builds the same
# extractors; process_value functions are named and reimplemented there).
OPTIONS_URL = "http://example.com:8080/dir/page.html"
OPTIONS_BODY = """<html><head><title>options</title></head><body>
<a href="/x">x one</a>
<a href="/x">x again</a>
<a href="http://u@sub.example.com/y.PDF;p=1">userinfo, upper-case extension, params</a>
<a href="http://sub.example.com/z.pdf;p=1">sub-domain</a>
<a href="http://EXAMPLE.com/w">upper-case host</a>
<a href="http://example.com:8080/w?b=2&a=1">port and query</a>
<a href="http://other.org/skip/me">other domain</a>
<a href="https://a.other.org/archive.tar.gz">double extension</a>
<a href="http://example.com/file.tar.GZ">upper double extension</a>
<a href="http://example.com/.zip">dot-file</a>
<a href="http://example.com/a.zip/">directory with a dot</a>
<a href="ftp://example.com/f.txt">ftp</a>
<a href="mailto:a@example.com">mail</a>
<a href="javascript:go('/js/target.html')">javascript</a>
<a href="#top">fragment</a>
<a href="page.html#other">own page, another fragment</a>
<area href="/area" alt="area">
<a href="/nofollow" rel="external NoFollow">nofollow</a>
<p><a href="/deep/one"><b>bold</b> text</a></p>
</body></html>"""

OPTIONS = {
    "default": {},
    "not_unique": {"unique": False},
    "canonicalize": {"canonicalize": True},
    "allow_domains": {"allow_domains": ["example.com"]},
    "allow_domains_port": {"allow_domains": ["example.com:8080"]},
    "allow_domains_upper": {"allow_domains": ["EXAMPLE.COM", "other.org"]},
    "deny_domains": {"deny_domains": ["example.com"]},
    "deny_extensions_none": {"deny_extensions": []},
    "deny_extensions_txt": {"deny_extensions": ["txt", "html"]},
    "allow": {"allow": [r"/d", r"w$"]},
    "deny": {"deny": [r"example\.com"]},
    "allow_deny": {"allow": [r"example"], "deny": [r"/w"]},
    "restrict_text": {"restrict_text": [r"again|bold"]},
    "restrict_text_not_unique": {"restrict_text": [r"again"], "unique": False},
    "tags_attrs": {"tags": ["a", "area", "p"], "attrs": ["href", "alt"]},
    "process_value_replace": {"process_value": "replace"},
    "process_value_js": {"process_value": "js"},
}


def process_value(name: str):
    if name == "replace":
        return lambda v: v.replace("x", "q")
    import re

    def js(v):
        m = re.search(r"javascript:go\('(.*?)'", v)
        return m.group(1) if m else None

    return js


def options_cases() -> list[dict]:
    response = HtmlResponse(
        OPTIONS_URL,
        body=OPTIONS_BODY.encode("utf-8"),
        headers={"Content-Type": "text/html; charset=utf-8"},
    )
    out = []
    for name, kwargs in OPTIONS.items():
        kw = dict(kwargs)
        if "process_value" in kw:
            kw["process_value"] = process_value(kw["process_value"])
        try:
            links = [
                {"url": l.url, "text": l.text, "nofollow": l.nofollow, "fragment": l.fragment}
                for l in LinkExtractor(**kw).extract_links(response)
            ]
        except Exception as e:  # noqa: BLE001
            links = err(e)
        out.append({"name": name, "options": kwargs, "links": links})
    return out


def main() -> None:
    hrefs = dedup(HREFS)
    cases = []
    for base in BASES:
        probe = HtmlResponse(
            base["url"],
            body=base["body"].encode("ascii"),
            headers={"Content-Type": base["content_type"]},
        )
        encoding = probe.encoding
        for href in [*([h] for h in hrefs), hrefs]:
            body = page(base, href, encoding)
            response = HtmlResponse(
                base["url"], body=body, headers={"Content-Type": base["content_type"]}
            )
            links = extract(response)
            cases.append({
                "base": base["name"],
                "hrefs": href,
                "body_hex": body.hex(),
                "links": links,
                "request": requests(links),
                "canon": extract(response, canonicalize=True),
            })
    write("linkextract.json", {
        "meta": meta("tests/data/urls/gen_linkextract.py"),
        "bases": [{k: b[k] for k in ("name", "url", "content_type")} for b in BASES],
        "count": len(cases),
        "cases": cases,
        "options_url": OPTIONS_URL,
        "options_body": OPTIONS_BODY,
        "options": options_cases(),
    })
    print(f"wrote linkextract.json ({len(cases)} cases)")


if __name__ == "__main__":
    main()
