"""Records Scrapy's XMLFeedSpider node iteration -> xmliter.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, parsel==1.12.1,
lxml==6.1.3, CPython 3.11):

    python tests/data/feeds_spiders/gen_xmliter.py

For each feed of ../select/xml_pages/ and each (iterator, itertag, namespaces): the
nodes XMLFeedSpider hands to parse_node, each as its .get() and the answers of a few
queries on it (`queries`), or the error.
"""

import json
import sys
from pathlib import Path

import scrapy
from scrapy.http import XmlResponse
from scrapy.spiders import XMLFeedSpider

HERE = Path(__file__).resolve().parent
PAGES = HERE.parent / "select" / "xml_pages"
ATOM = [["a", "http://www.w3.org/2005/Atom"], ["media", "http://search.yahoo.com/mrss/"]]
RSS = [["dc", "http://purl.org/dc/elements/1.1/"], ["content", "http://purl.org/rss/1.0/modules/content/"]]

CASES = [
    ("rss.xml", "iternodes", "item", [], ["title/text()", "link/text()", "count(*)", "name()"]),
    ("rss.xml", "iternodes", "item", RSS, ["dc:creator/text()", "content:encoded/text()"]),
    ("rss.xml", "xml", "item", RSS, ["title/text()", "dc:creator/text()"]),
    ("rss.xml", "html", "item", [], ["title/text()", "name()"]),
    ("rss.xml", "iternodes", "dc:creator", [], ["text()", "name()"]),
    ("rss.xml", "iternodes", "category", [], ["text()"]),
    ("atom.xml", "iternodes", "entry", [], ["name()"]),
    ("atom.xml", "iternodes", "a:entry", ATOM, ["a:title/text()", "a:link/@href", "media:thumbnail/@url"]),
    ("atom.xml", "xml", "a:entry", ATOM, ["a:title/text()", "a:link/@href"]),
    ("atom.xml", "iternodes", "media:thumbnail", [], ["@url", "name()", "namespace-uri()"]),
    ("products.xml", "iternodes", "product", [], ["@id", "name/text()", "g:price/text()"]),
    ("products.xml", "iternodes", "product", [["g", "http://base.google.com/ns/1.0"]], ["@id", "g:price/text()", "@g:id"]),
    ("products.xml", "iternodes", "tag", [], ["text()"]),
    ("products.xml", "xml", "product", [], ["@id", "name/text()"]),
]


def main():
    out = {"versions": {"scrapy": scrapy.__version__, "python": sys.version.split()[0]}, "cases": []}
    for page, iterator, itertag, namespaces, queries in CASES:
        body = (PAGES / page).read_bytes()
        response = XmlResponse(f"http://example.com/{page}", body=body,
                               headers={"Content-Type": "application/xml"})
        seen = []

        class S(XMLFeedSpider):
            name = "s"

            def parse_node(self, response, selector):
                node = {"get": selector.get(), "queries": {}}
                for q in queries:
                    try:
                        node["queries"][q] = selector.xpath(q).getall()
                    except Exception as exc:  # noqa: BLE001
                        node["queries"][q] = {"error": type(exc).__name__}
                seen.append(node)
                return []

        S.iterator = iterator
        S.itertag = itertag
        S.namespaces = [tuple(n) for n in namespaces]
        case = {"page": page, "iterator": iterator, "itertag": itertag,
                "namespaces": namespaces, "queries": queries}
        try:
            list(S()._parse(response))
            case["nodes"] = seen
        except Exception as exc:  # noqa: BLE001
            case["error"] = f"{type(exc).__name__}: {exc}"
            case["nodes"] = seen
        out["cases"].append(case)
    with open(HERE / "xmliter.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(f"{len(out['cases'])} cases -> {HERE / 'xmliter.json'}")


if __name__ == "__main__":
    main()
