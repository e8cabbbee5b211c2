#!/usr/bin/env python3
"""Record parsel 1.12's SelectorList.re() / .re_first() on one page.

Usage (from the repository root, in the reference venv):

    /work/venv-ref/bin/python tests/data/select/gen_re.py

Writes re.json next to this script: the page, and for each (css, regex,
replace_entities) case the results of .re() and .re_first() (or the error). The
regexes use syntax Python's re and Rust's regex read alike.
"""

from __future__ import annotations

import json
from pathlib import Path

from parsel import Selector

HERE = Path(__file__).resolve().parent

PAGE = """<html><head><title>Price list &amp; more</title></head><body>
<p class="price">Price: 100 EUR, was 120 EUR</p>
<p class="price">Price: 7 USD</p>
<p class="date">2026-11-30 and 1999-01-02</p>
<p class="ent">&amp;copy; &amp;copy &amp;lt; &amp;amp; &amp;AMP; &amp;nbsp;x &amp;eacute; &amp;Eacute &amp;hellip;</p>
<p class="num">&amp;#65; &amp;#x42; &amp;#X43; &amp;#0; &amp;#128; &amp;#129; &amp;#150; &amp;#xD800; &amp;#1114112; &amp;#99999999999999999999;</p>
<p class="odd">&amp;unknown; &amp;unknown &amp;Tab; &amp;#; &amp;#x; &amp; alone &amp;amp&amp;copy;</p>
<a href="/item?id=42&amp;page=3" data-x="k=v; k2=v2">Item 42</a>
<a href="/item?id=7">Item 7</a>
<ul><li>one</li><li>two</li><li></li></ul>
</body></html>"""

CASES = [
    ["p.price::text", r"\d+", True],
    ["p.price::text", r"(\d+) (\w+)", True],
    ["p.price::text", r"Price: (?P<extract>\d+)", True],
    ["p.price::text", r"nothing here", True],
    ["p.date::text", r"(\d{4})-(\d\d)-(\d\d)", True],
    ["p.date::text", r"(\d{4})-(?:\d\d)-(\d\d)?", True],
    ["p.date::text", r"(x)?(\d{4})", True],
    ["p.ent::text", r".+", True],
    ["p.ent::text", r".+", False],
    ["p.num::text", r".+", True],
    ["p.odd::text", r".+", True],
    ["p.odd::text", r"\S+", True],
    ["a::attr(href)", r"id=(\d+)", True],
    ["a::attr(href)", r"page=(\d+)", True],
    ["a::attr(data-x)", r"(\w+)=(\w+)", True],
    ["li::text", r"\w*", True],
    ["li::text", r"o", True],
    ["title::text", r"(?P<extract>\w+) list", True],
    ["title::text", r"&", True],
    ["p.price::text", r"(?i)price", True],
    ["p.price::text", r"^Price", True],
    ["p.price::text", r"EUR$", True],
    ["p.price::text", r"x*", True],
]


def main() -> None:
    sel = Selector(text=PAGE)
    out = []
    for css, regex, replace in CASES:
        try:
            res = sel.css(css).re(regex, replace_entities=replace)
            first = sel.css(css).re_first(regex, replace_entities=replace)
            got = {"re": res, "re_first": first}
        except Exception as e:  # noqa: BLE001
            got = {"error": f"{type(e).__name__}: {e}"}
        out.append({"css": css, "regex": regex, "replace_entities": replace, "result": got})
    with open(HERE / "re.json", "w", encoding="utf-8", newline="\n") as f:
        json.dump({"page": PAGE, "cases": out}, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote re.json ({len(out)} cases)")


if __name__ == "__main__":
    main()
