"""Records lxml's HTML serialisation of elements as parsel's ``.get()`` gives it ->
serialize.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, parsel==1.12.1,
lxml==6.1.3, CPython 3.11):

    python tests/data/select/gen_serialize.py

Pages: the sample pages of ``../html/pages/`` (with the Content-Type of
``../html/manifest.json``), the XPath pages of ``xpath_pages/`` and the pages of
``serialize_pages/`` (served as UTF-8). For each page, ``response.xpath("//*")``: each
element's position in that list (document order), its tag and ``.get()`` — all of them
when a page has at most 250 elements, else 250 spread evenly; outer HTML over 3,000
characters is left out (recorded as ``null``: the element is still counted).

Then 400 generated documents (seeded, so the output is the same on every run): random
markup from a vocabulary of elements (void, raw text, RCDATA, table and list parts,
custom tags) with attributes in every form (valueless, empty, boolean with and without
values, both quotes inside, `<`, `>`, `&`, `&{...}`, `<!--...-->`, `href` / `src` /
`action` / `name` with spaces, non-ASCII and controls), comments and bogus comments,
text with `<`, `>`, `&`, quotes, no-break spaces and non-ASCII; their text is stored in
the page entry (`body`).

Format: {"versions", "pages": [{"page", "url", "content_type", "body" (generated
pages), "elements": N, "cases": [[index, tag, html or null], ...]}]}.
"""

import json
import random
import sys
from pathlib import Path

import lxml
import parsel
import scrapy
from lxml import etree
from scrapy.http import HtmlResponse

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
MAX_PER_PAGE = 250
MAX_LEN = 3000


def pages():
    manifest = json.loads((DATA / "html" / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["pages"]:
        yield {
            "page": "html/" + entry["page"],
            "url": entry["url"],
            "content_type": entry["content_type"],
        }
    for folder in ("xpath_pages", "serialize_pages"):
        for path in sorted((HERE / folder).glob("*.html")):
            yield {
                "page": path.relative_to(DATA).as_posix(),
                "url": f"http://example.com/{folder}/{path.name}",
                "content_type": "text/html; charset=utf-8",
            }


TAGS = [
    "a", "b", "i", "p", "div", "span", "li", "ul", "table", "tr", "td", "th", "tbody",
    "select", "option", "form", "br", "img", "hr", "input", "meta", "link", "col",
    "area", "script", "style", "textarea", "title", "xmp", "noscript", "iframe", "pre",
    "x-widget", "svg", "use", "button", "label", "em", "wbr", "source", "dl", "dt",
]
ATTR_NAMES = ["id", "class", "title", "href", "src", "action", "name", "data-x", "alt",
              "checked", "selected", "disabled", "hidden", "value", "style", "xlink:href"]
VALUES = ["", " ", "x", "a b", "say \"hi\"", "it's", "both \" and '", "a < b > c",
          "&amp;", "&{tpl}", "x <!-- ssi --> y", "caf\u00e9", "/p q?r=s t&amp;u=\u00fc#f g",
          "  /lead", "\u00a0nb", "\ttab\nnl", "http://e.x/{a}/[b]/|c|", "%20enc", "&lt;&gt;"]
TEXTS = ["alpha", "a < b", "x & y", "\"q\"", "'s'", "\u00a0", "caf\u00e9", "&amp;",
         "&lt;tag&gt;", "&nbsp;", "\n", "  ", "\u2603", "&#169;", "1 > 0"]


def attr(rng):
    name = rng.choice(ATTR_NAMES)
    form = rng.random()
    if form < 0.15:
        return " " + name
    value = rng.choice(VALUES)
    if '"' not in value:
        return ' %s="%s"' % (name, value)
    if "'" not in value:
        return " %s='%s'" % (name, value)
    return ' %s="%s"' % (name, value.replace('"', "&quot;"))


def generated(rng):
    out = []
    for _ in range(rng.randint(3, 30)):
        r = rng.random()
        tag = rng.choice(TAGS)
        if r < 0.45:
            attrs = "".join(attr(rng) for _ in range(rng.randint(0, 3)))
            out.append("<%s%s>" % (tag, attrs))
        elif r < 0.65:
            out.append("</%s>" % tag)
        elif r < 0.72:
            out.append(rng.choice(["<!-- c -->", "<!---->", "<!-- a < b & c -->",
                                   "<?pi x?>", "<!bogus>"]))
        else:
            out.append(rng.choice(TEXTS))
    return "".join(out)


def main():
    out = {
        "versions": {
            "scrapy": scrapy.__version__,
            "parsel": parsel.__version__,
            "lxml": ".".join(map(str, etree.LXML_VERSION)),
            "libxml2": ".".join(map(str, etree.LIBXML_VERSION)),
            "python": sys.version.split()[0],
        },
        "pages": [],
    }
    total = 0
    for page in pages():
        body = (DATA / page["page"]).read_bytes()
        headers = {"Content-Type": page["content_type"]} if page["content_type"] else {}
        response = HtmlResponse(page["url"], body=body, headers=headers)
        elements = response.xpath("//*")
        n = len(elements)
        if n <= MAX_PER_PAGE:
            picks = range(n)
        else:
            picks = sorted({i * n // MAX_PER_PAGE for i in range(MAX_PER_PAGE)})
        cases = []
        for i in picks:
            sel = elements[i]
            html = sel.get()
            cases.append([i, sel.root.tag, html if len(html) <= MAX_LEN else None])
        total += len(cases)
        out["pages"].append({**page, "elements": n, "cases": cases})
    rng = random.Random(4321)
    for n in range(400):
        text = generated(rng)
        response = HtmlResponse(
            f"http://example.com/generated/{n}.html",
            body=text.encode("utf-8"),
            headers={"Content-Type": "text/html; charset=utf-8"},
        )
        elements = response.xpath("//*")
        cases = []
        for i, sel in enumerate(elements):
            html = sel.get()
            cases.append([i, sel.root.tag, html if len(html) <= MAX_LEN else None])
        total += len(cases)
        out["pages"].append({
            "page": f"generated/{n}",
            "url": f"http://example.com/generated/{n}.html",
            "content_type": "text/html; charset=utf-8",
            "body": text,
            "elements": len(elements),
            "cases": cases,
        })
    path = HERE / "serialize.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    print(f"{len(out['pages'])} pages, {total} elements -> {path}")


if __name__ == "__main__":
    main()
