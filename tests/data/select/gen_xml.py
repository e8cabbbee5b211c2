"""Records parsel's XML selection (Scrapy's XmlResponse) -> xml.json.

Usage (from the repository root, in a venv with scrapy==2.19.0, parsel==1.12.1,
lxml==6.1.3, CPython 3.11):

    python tests/data/select/gen_xml.py

For each page of xml_pages/ (served as application/xml) and each case: the
namespaces given (`namespaces=` of xpath, or registered with register_namespace first),
whether remove_namespaces() ran first, the query (xpath or css), and each result's
.get() value, or the error.
"""

import json
import sys
from pathlib import Path

import lxml.etree
import parsel
import scrapy
from scrapy.http import XmlResponse
from scrapy.responsetypes import responsetypes

HERE = Path(__file__).resolve().parent
ATOM = {"a": "http://www.w3.org/2005/Atom", "media": "http://search.yahoo.com/mrss/"}
RSS = {"content": "http://purl.org/rss/1.0/modules/content/", "dc": "http://purl.org/dc/elements/1.1/"}
G = {"g": "http://base.google.com/ns/1.0"}

CASES = {
    "atom.xml": [
        ("xpath", "//entry/title/text()", None, False),
        ("xpath", "//a:entry/a:title/text()", ATOM, False),
        ("xpath", "//a:entry/a:link/@href", ATOM, False),
        ("xpath", "//a:entry", ATOM, False),
        ("xpath", "//a:entry/a:title", ATOM, False),
        ("xpath", "//media:thumbnail/@url", ATOM, False),
        ("xpath", "//media:thumbnail", ATOM, False),
        ("xpath", "name(/*)", None, False),
        ("xpath", "local-name(/*)", None, False),
        ("xpath", "namespace-uri(/*)", None, False),
        ("xpath", "name(//media:thumbnail)", ATOM, False),
        ("xpath", "local-name(//media:thumbnail)", ATOM, False),
        ("xpath", "namespace-uri(//media:thumbnail)", ATOM, False),
        ("xpath", "count(//a:*)", ATOM, False),
        ("xpath", "count(//*)", None, False),
        ("xpath", "//*[local-name()='title']/text()", None, False),
        ("xpath", "//a:summary/text()", ATOM, False),
        ("xpath", "//a:summary", ATOM, False),
        ("xpath", "//comment()", None, False),
        ("xpath", "/*/@xml:lang", None, False),
        ("xpath", "//@*", None, False),
        ("xpath", "//x:p", {"x": "http://www.w3.org/1999/xhtml"}, False),
        ("xpath", "//x:div", {"x": "http://www.w3.org/1999/xhtml"}, False),
        ("xpath", "//a:content", ATOM, False),
        ("xpath", "//entry/title/text()", None, True),
        ("xpath", "//entry/link/@href", None, True),
        ("xpath", "//thumbnail/@url", None, True),
        ("xpath", "name(//thumbnail)", None, True),
        ("xpath", "namespace-uri(/*)", None, True),
        ("xpath", "//entry[2]", None, True),
        ("xpath", "//content/div/p//text()", None, True),
        ("xpath", "//div", None, True),
        ("css", "entry title::text", None, True),
        ("css", "entry > link::attr(href)", None, True),
        ("css", "title::text", None, False),
        ("xpath", "//a:entry", "register", False),
        ("xpath", "//undeclared:entry", None, False),
    ],
    "rss.xml": [
        ("xpath", "//item/title/text()", None, False),
        ("xpath", "//item/dc:creator/text()", RSS, False),
        ("xpath", "//item/content:encoded/text()", RSS, False),
        ("xpath", "//content:encoded", RSS, False),
        ("xpath", "//item/category/text()", None, False),
        ("xpath", "//item/price/@currency", None, False),
        ("xpath", "//item[price > 10]/title/text()", None, False),
        ("xpath", "//item/description/text()", None, False),
        ("xpath", "//item", None, False),
        ("xpath", "//item[1]/link", None, False),
        ("xpath", "string(//channel/title)", None, False),
        ("xpath", "name(//dc:creator)", RSS, False),
        ("xpath", "//creator/text()", None, True),
        ("xpath", "//encoded", None, True),
        ("css", "item > title::text", None, False),
        ("css", "item price::attr(currency)", None, False),
        ("css", "item", None, False),
    ],
    "products.xml": [
        ("xpath", "//product/@id", None, False),
        ("xpath", "//product/@g:id", G, False),
        ("xpath", "//product/g:price/text()", G, False),
        ("xpath", "//product[@id='p1']", None, False),
        ("xpath", "//product[@id='p2']/name", None, False),
        ("xpath", "//product[@id='p2']/note/text()", None, False),
        ("xpath", "//tags", None, False),
        ("xpath", "//empty", None, False),
        ("xpath", "//processing-instruction()", None, False),
        ("xpath", "count(//node())", None, False),
        ("xpath", "//product/@*", None, False),
        ("xpath", "//product/@id", None, True),
        ("xpath", "//product/@*", None, True),
        ("xpath", "//price/text()", None, True),
        ("xpath", "//product[1]", None, True),
        ("css", "product[id=p1] name::text", None, False),
        ("css", "tags tag::text", None, False),
    ],
}


def main():
    out = {
        "versions": {
            "scrapy": scrapy.__version__,
            "parsel": parsel.__version__,
            "lxml": ".".join(map(str, lxml.etree.LXML_VERSION)),
            "libxml2": ".".join(map(str, lxml.etree.LIBXML_VERSION)),
            "python": sys.version.split()[0],
        },
        "response_types": {},
        "cases": [],
    }
    for ct in ["application/xml", "text/xml", "application/rss+xml", "application/atom+xml",
               "application/rdf+xml", "application/xhtml+xml", "text/html", "application/json",
               "application/x-xml", "image/svg+xml", "text/plain"]:
        cls = responsetypes.from_mimetype(ct)
        out["response_types"][ct] = cls.__name__
    for page, cases in CASES.items():
        body = (HERE / "xml_pages" / page).read_bytes()
        for kind, query, namespaces, remove in cases:
            r = XmlResponse(f"http://example.com/{page}", body=body,
                            headers={"Content-Type": "application/xml"})
            case = {"page": page, "kind": kind, "query": query, "remove_namespaces": remove,
                    "namespaces": namespaces if namespaces != "register" else None,
                    "registered": ATOM if namespaces == "register" else None}
            try:
                if namespaces == "register":
                    for p, u in ATOM.items():
                        r.selector.register_namespace(p, u)
                if remove:
                    r.selector.remove_namespaces()
                if kind == "css":
                    sel = r.css(query)
                elif namespaces and namespaces != "register":
                    sel = r.xpath(query, namespaces=namespaces)
                else:
                    sel = r.xpath(query)
                case["results"] = sel.getall()
            except Exception as exc:  # noqa: BLE001 - a recorded answer
                case["error"] = f"{type(exc).__name__}: {exc}"
            out["cases"].append(case)
    with open(HERE / "xml.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(f"{len(out['cases'])} cases -> {HERE / 'xml.json'}")


if __name__ == "__main__":
    main()
