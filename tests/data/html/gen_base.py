#!/usr/bin/env python3
"""Record Scrapy's base URL (scrapy.utils.response.get_base_url, i.e. w3lib's
get_base_url over response.text[0:4096]) for odd <base> markup.

Usage (from the repository root, in the reference venv of gen_links.py):

    /work/venv-ref/bin/python tests/data/html/gen_base.py

Writes base.json next to this script: for each snippet, the page body, the page URL
and Content-Type, and ``base`` = get_base_url(response) (or the exception text).
"""

from __future__ import annotations

import json
from pathlib import Path

from scrapy.http import HtmlResponse
from scrapy.utils.response import get_base_url

HERE = Path(__file__).resolve().parent
URL = "http://example.com/dir/page.html?q=1"

SNIPPETS = [
    '<base href="/a/">',
    '<base href="http://other.org/x/y.html">',
    "<BASE target=x HREF='/b/' href=\"/c/\">",
    '<base target=x><base href=/d/>',
    '<base href=""><base href="/e/">',
    '<base href><base href="/e2/">',
    '<base href="   "><base href="/e3/">',
    '<base href=" /f/ ">',
    '<base\thref="/g/">',
    '<base\x0bhref="/g2/">',
    '<base\x0chref="/g3/">',
    '<basehref="/h/">',
    '<basex href="/i/">',
    '<!-- <base href="/j/"> --><base href="/k/">',
    '<!--> <base href="/l/"> --><base href="/m/">',
    '<!-- unclosed <base href="/n/">',
    '<script>var s = "<base href=\'/o/\'>";</script><base href="/p/">',
    '<script>x</script ><base href="/q/"></script><base href="/r/">',
    '<SCRIPT type="a>b">"<base href=/s/>"</SCRIPT><base href="/t/">',
    '<noscript><base href="/u/"></noscript><base href="/v/">',
    '<scripts><base href="/w/">',
    '<style><base href="/x/"></style>',
    '<textarea><base href="/y/"></textarea>',
    '<title><base href="/z/"></title>',
    '<base href="/aa/" href="/bb/">',
    '<base data-href="/cc/" href="/dd/">',
    '<base hreff="/ee/" href="/ff/">',
    '<base xhref="/gg/">',
    '<base href = \'/hh/\' >',
    '<base href=/ii/>',
    '<base href=/jj/ target=_blank>',
    '<base href="/kk/>',
    "<base href='/ll/>",
    '<base target="a>b" href="/mm/">',
    '<base target="unclosed href="/nn/">',
    '<base target=\'x\' href="/oo/"',
    '<base\n  href="/pp/"\n>',
    '<base href="?query">',
    '<base href="#frag">',
    '<base href="//cdn.example.net/qq/">',
    '<base href="javascript:void(0)">',
    '<base href="../../rr/">',
    '<base href="/ss/ä ö?ü=1">',
    '<base href="http://exa mple.com/">',
    '<base href="http://[::1/">',
    '<base href=\u3000"/tt/">',
    '<base href="\u3000/uu/\u3000">',
    '<base hr\u00e9f="/vv/" href="/ww/">',
    '<p>' + 'x' * 5000 + '<base href="/late/">',
    '<p>' + 'x' * 4080 + '<base href="/cut/">',
    '<p>' + 'é' * 4080 + '<base href="/cut2/">',
    '<a <base href="/xx/">',
    '<base <base href="/yy/">',
]


def main() -> None:
    cases = []
    for s in SNIPPETS:
        body = f"<html><head>{s}</head><body><a href='rel.html'>r</a></body></html>"
        response = HtmlResponse(
            URL, body=body.encode("utf-8"), headers={"Content-Type": "text/html; charset=utf-8"}
        )
        try:
            base = get_base_url(response)
        except Exception as e:  # noqa: BLE001
            base = {"error": f"{type(e).__name__}: {e}"}
        cases.append({"body": body, "base": base})
    with open(HERE / "base.json", "w", encoding="utf-8", newline="\n") as f:
        json.dump({"url": URL, "count": len(cases), "cases": cases}, f,
                  ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote base.json ({len(cases)} cases)")


if __name__ == "__main__":
    main()
