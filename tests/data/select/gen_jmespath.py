#!/usr/bin/env python3
"""Record parsel 1.12's ``.jmespath()`` (Python ``jmespath`` 1.1) on JSON responses and
on JSON inside HTML, for ``tests/jmespath_parsel.rs``.

Usage (from the repository root):

    /work/venv-ref/bin/python tests/data/select/gen_jmespath.py

Each case: a response (``body``, ``content_type``), a chain of steps (``["css", q]``
or ``["jmespath", q]``) applied as ``response.css(q)`` / ``.jmespath(q)``, and either
``results`` — each ``.get()`` value, strings as strings and other JSON values as JSON
(``{"json": value}``) — or ``error`` for a query that does not compile.
"""

from __future__ import annotations

import json
from pathlib import Path

import jmespath
import parsel
import scrapy
from scrapy.http import HtmlResponse, TextResponse

HERE = Path(__file__).resolve().parent

DOC = {
    "name": "trawl",
    "version": 3,
    "ratio": 0.5,
    "ok": True,
    "none": None,
    "tags": ["crawler", "reactor", "redis"],
    "quotes": [
        {"text": "One", "author": {"name": "Ann", "born": 1970}, "tags": ["a", "b"]},
        {"text": "Two", "author": {"name": "Bob", "born": 1985}, "tags": []},
        {"text": "Three", "author": {"name": "Cy", "born": 1990}, "tags": ["b"]},
    ],
    "nested": {"a": {"b": {"c": [1, 2, 3]}}},
    "pages": {"next": "/api?page=2", "prev": None},
}

QUERIES = [
    "name", "version", "ratio", "ok", "none", "missing", "tags", "tags[0]", "tags[-1]",
    "tags[1:]", "tags[::-1]", "quotes[*].text", "quotes[].author.name", "quotes[0]",
    "quotes[?author.born > `1980`].text", "quotes[?contains(tags, 'b')].text",
    "length(quotes)", "quotes[*].tags[]", "sort_by(quotes, &author.born)[-1].text",
    "max_by(quotes, &author.born).author.name", "nested.a.b.c", "nested.a.b.c[1]",
    "{n: name, v: version}", "[name, version]", "pages.next", "pages.prev",
    "quotes[*].author", "keys(pages)", "join(', ', tags)", "starts_with(name, 'tr')",
    "to_string(version)", "quotes[?text == 'Two'] | [0].author.born", "*.next",
    "quotes[*].[text, author.name]", "not_null(none, name)", "sum(nested.a.b.c)",
    "avg(quotes[*].author.born)", "reverse(tags)", "type(ratio)", "@.name",
]

BAD = ["quotes[", "foo(", "a..b", "[?]", "`bad json"]

HTML = (
    '<html><head><script type="application/ld+json">{"@type": "Product", '
    '"name": "Widget", "offers": {"price": "9.99", "currency": "EUR"}, '
    '"ratings": [4, 5, 3]}</script><script>var x = 1;</script></head>'
    '<body><div data-state=\'{"user": {"id": 7, "roles": ["admin", "dev"]}}\'>x</div>'
    "</body></html>"
)

HTML_CHAINS = [
    [["css", 'script[type="application/ld+json"]::text'], ["jmespath", "name"]],
    [["css", 'script[type="application/ld+json"]::text'], ["jmespath", "offers.price"]],
    [["css", 'script[type="application/ld+json"]::text'], ["jmespath", "ratings"]],
    [["css", 'script[type="application/ld+json"]::text'], ["jmespath", "max(ratings)"]],
    [["css", "script::text"], ["jmespath", "name"]],
    [["css", "div::attr(data-state)"], ["jmespath", "user.roles[0]"]],
    [["css", "div::attr(data-state)"], ["jmespath", "user"]],
    [["jmespath", "name"]],
]


def value(v):
    return v if isinstance(v, str) else {"json": v}


def run(response, chain):
    sel = response
    for kind, q in chain:
        sel = sel.css(q) if kind == "css" else sel.jmespath(q)
    return [value(x) for x in sel.getall()]


def main() -> None:
    cases = []
    body = json.dumps(DOC)
    json_resp = TextResponse(
        "http://example.com/api", body=body.encode(), headers={"Content-Type": "application/json"}
    )
    for q in QUERIES:
        cases.append({"body": body, "content_type": "application/json",
                      "chain": [["jmespath", q]], "results": run(json_resp, [["jmespath", q]])})
    for q in BAD:
        try:
            run(json_resp, [["jmespath", q]])
            raise AssertionError(f"{q} compiled")
        except jmespath.exceptions.JMESPathError as e:
            cases.append({"body": body, "content_type": "application/json",
                          "chain": [["jmespath", q]], "error": type(e).__name__})
    html_resp = HtmlResponse(
        "http://example.com/p", body=HTML.encode(), headers={"Content-Type": "text/html; charset=utf-8"}
    )
    for chain in HTML_CHAINS:
        cases.append({"body": HTML, "content_type": "text/html; charset=utf-8",
                      "chain": chain, "results": run(html_resp, chain)})
    out = {
        "description": "parsel .jmespath() results (each .get(); non-strings as {'json': value})",
        "generator": "tests/data/select/gen_jmespath.py",
        "versions": {"parsel": parsel.__version__, "jmespath": jmespath.__version__,
                     "scrapy": scrapy.__version__},
        "count": len(cases),
        "cases": cases,
    }
    (HERE / "jmespath.json").write_text(
        json.dumps(out, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
    print(f"wrote jmespath.json: {len(cases)} cases")


if __name__ == "__main__":
    main()
