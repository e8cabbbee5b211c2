#!/usr/bin/env python3
"""Record how lxml (libxml2), the parser behind Scrapy's selectors, repairs broken HTML.

For each input (hand-written cases below, then seeded random tag soup), parse it as
parsel does (``lxml.html.HTMLParser(recover=True, encoding="utf-8")`` through
``etree.fromstring``) and write the tree of the root element as a flat list of
events: ``<tag a="v" ...>``, ``</tag>`` and ``#text`` (adjacent texts merged, comments
and processing instructions dropped, attributes in source order).

The random soup never contains ``</body>`` or ``</html>``: after those, libxml2 moves
content out of the body (and after ``</html>`` out of the root element), where trawl
deliberately keeps it in the body (DESIGN.md); nor more than 200 nested elements.

Run from the repository root:  /work/venv-ref/bin/python tests/data/html/gen_trees.py
"""

import json
import random
import sys

import lxml
import lxml.etree as etree
import lxml.html

HAND = [
    "<p>one<p>two<div>block</div><ul><li>a<li>b</ul><table><tr><td>1<td>2<tr><td>3</table>",
    "<div>a</p>b</div>",
    "<p>x</p></p>",
    "<head><title>t</title></head><body>",
    "x<head><meta>",
    "<div><a href=x>1<div>2</a>3</div>",
    "<span><a href=x>1</span>2</a>",
    "<table><tr><td><a href=x>1</td><td>2</a></table>",
    "<select><option>a<option>b</select>",
    "<p>a<div>b</div>c",
    "<dl><dt>a<dd>b<dt>c</dl>",
    "<form><form>x</form>",
    "<b><p>x</b>y",
    "<a href=x><div>t</div></a>",
    "<title/>x",
    "<script/>x<b>y",
    "<table><a href=x>f</a><tr><td>c</td></tr></table>",
    "<p>a<table><tr><td>c</table>",
    "<li>a<li>b<ul><li>c</ul>",
    "<p><embed src=x>text</p>",
    "<wbr>a<wbr>b",
    "<a href=five.html/>Five</a>",
    "<a href='/x'/><p>after</p>",
    "<a href=outer>outer <a href=inner>inner</a> tail</a>",
    "<a href=o2><b>bold <a href=i2>inner2</a> rest</b></a>",
    "<a href=u1>one<a href=u2>two<p>para <a href=u3>three <b>bold",
    "<h1>a<h2>b</h1>c",
    "<h1>a<p>b<h2>c",
    "<ul><li>a<ol><li>b</ul>c",
    "<table><caption>c<tr><td>x</table>",
    "<table><colgroup><col><col><tbody><tr><td>x</table>",
    "<table><thead><tr><th>h<tbody><tr><td>d<tfoot><tr><td>f</table>",
    "<tr><td>no table</td></tr>",
    "<td>cell</td>text",
    "<option>o1<optgroup>g<option>o2",
    "<font>a<center>b</center>c</font>",
    "<i>a<td>b</i>",
    "<u>a<p>b",
    "<pre>a<ul><li>x</ul>",
    "<address>a<dl><dt>x</dl>",
    "<xmp>a<b>b</xmp>c",
    "<textarea><b>t</b></textarea>after",
    "<style>p{}</style><p>x",
    "<script>var a='<p>';</script><p>x",
    "<noscript><p>n</noscript>x",
    "<head><noscript><link></noscript></head>x",
    "<meta charset=utf-8><title>T</title><p>x",
    "<html><p>x",
    "<html><head></head><p>x",
    "<body><p>x<body>y",
    "<head><head>x",
    "<html><html>x",
    "text first<p>then",
    "   <p>ws first",
    "<!-- c --><p>x<!-- d -->y",
    "<p>a<!---->b",
    "<p>&amp;&lt;&gt;&quot;&#65;&#x42;&copy;&notin;&notit;&bogus;",
    "<a href='a&amp;b&copy=c&copy;d'>x</a>",
    "<a title=\"x\" TITLE=y Href=z href=w>t</a>",
    "<a b c d=e>t</a>",
    "<p>a<br>b<br/>c<hr>d",
    "<img src=x>text<img src=y/>more",
    "<input value=x>t",
    "<frameset><frame src=a></frameset>",
    "<div><span><b>deep</b></span></div>x",
    "<div><div><div>three</div></div>after</div>",
    "<td>a<td>b",
    "<th>a<td>b<tr>c",
    "<tbody><tr><td>x",
    "<thead>a<tbody>b",
    "<colgroup>a<col>b",
    "<caption>a<tr>b",
    "<dir>a<dd>b",
    "<menu>a<ul>b",
    "<listing>a<li>b",
    "<legend>a<fieldset>b",
    "<hr>a<form>b",
    "<ol>a<form>b",
    "<ul>a<address>b",
    "<s>a<p>b",
    "<strike>a<p>b",
    "<tt>a<p>b",
    "<big>a<p>b",
    "<small>a<p>b",
    "<span>a<td>b",
    "<link><body>x",
    "<style></style><body>x",
    "<title>t</title><frameset>",
    "<script></script><noscript>x",
    "<div>a</div></div>b",
    "<div><table><tr><td>x</div>y",
    "<table><tr><td>x</table></td>y",
    "<p>a</b>b</i>c",
    "<b>a<i>b</b>c</i>d",
    "<a href=x>a<p>b</a>c",
    "<em>a<div>b</em>c</div>d",
    "<div><em>a</div>b",
    "<p>\n  <a href=x>\n  link\n  </a>\n</p>",
    "<ul>\n<li>a</li>\n<li>b</li>\n</ul>",
    "<p>a\r\nb\rc</p>",
    "<template><p>t</template>x",
    "<svg><a href=s>svg</a></svg>",
    "<math><mi>x</mi></math>",
    "<object><param name=a><a href=o>obj</a></object>",
    "<button><a href=b>btn</a></button>",
    "<label>a<input>b</label>",
    "<iframe><a href=i>f</a></iframe>x",
    "<noembed><a>n</a></noembed>x",
    "<noframes><a>n</a></noframes>x",
    "<plaintext><a>p</a>",
    "<x-foo>custom<x-bar>nested</x-foo>after",
    "<a:b>ns</a:b>",
    "<p id=1><p id=2>",
    "<div class='a b'><div class=c>x</div></div>",
    # Attribute names lower-cased wherever their capital letter is (first, last, inside).
    "<p Href=1 datA=2 tItle=3 CLASS=4 id=5 X=6 =Y=7 a-B_c=8 \u00c9t\u00c9=9>t</p>",
]

VOCAB = [
    "a", "b", "i", "p", "div", "span", "li", "ul", "ol", "dl", "dt", "dd", "table",
    "tr", "td", "th", "tbody", "thead", "tfoot", "caption", "form", "select", "option",
    "optgroup", "h1", "h2", "head", "body", "title", "br", "img", "hr", "input",
    "font", "center", "pre", "em", "strong", "small", "label", "button", "address",
    "fieldset", "legend", "col", "colgroup", "menu", "dir", "u", "s", "x-foo", "meta",
    "link", "style", "script", "noscript", "html",
]
WORDS = ["alpha", "beta", "&amp;", "&copy;", " ", "\n", "x y", "&#65;", "<", "é"]


def soup(rng):
    out = []
    depth = 0
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        tag = rng.choice(VOCAB)
        if r < 0.45 and depth < 200:
            attrs = ""
            if rng.random() < 0.3:
                attrs = " href=%s" % rng.choice(["x", "'y&amp;z'", '"/p q"'])
            if rng.random() < 0.1:
                attrs += " class=c"
            close = "/" if rng.random() < 0.05 else ""
            out.append("<%s%s%s>" % (tag, attrs, close))
            depth += 1
        elif r < 0.75:
            if tag in ("body", "html"):
                tag = "div"
            out.append("</%s>" % tag)
        else:
            out.append(rng.choice(WORDS))
    return "".join(out)


def events(root):
    ev = []

    def text(t):
        if not t:
            return
        if ev and ev[-1][0] == "#text":
            ev[-1] = ("#text", ev[-1][1] + t)
        else:
            ev.append(("#text", t))

    def walk(e):
        if not isinstance(e.tag, str):  # comment or processing instruction
            text(e.tail)
            return
        attrs = "".join(' %s="%s"' % (k, v) for k, v in e.attrib.items())
        ev.append(("<", "%s%s" % (e.tag, attrs)))
        text(e.text)
        for c in e:
            walk(c)
        ev.append(("</", e.tag))
        text(e.tail)

    walk(root)
    # The root's tail is outside the root.
    if ev and ev[-1][0] == "#text" and root.tail:
        ev.pop()
    return ["%s%s" % (k if k != "#text" else "#", v) if k != "<" else "<%s>" % v
            for k, v in ev]


def parse(html):
    parser = lxml.html.HTMLParser(recover=True, encoding="utf-8")
    root = etree.fromstring(html.encode("utf-8"), parser=parser)
    if root is None:
        return None
    return events(root)


def main():
    rng = random.Random(20261130)
    inputs = list(HAND) + [soup(rng) for _ in range(3000)]
    cases = []
    for html in inputs:
        try:
            cases.append({"html": html, "events": parse(html)})
        except Exception as e:  # recorded, never hidden
            cases.append({"html": html, "error": "%s: %s" % (type(e).__name__, e)})
    meta = {
        "lxml": lxml.__version__,
        "libxml2": ".".join(map(str, etree.LIBXML_VERSION)),
        "python": sys.version.split()[0],
        "parser": "lxml.html.HTMLParser(recover=True, encoding='utf-8') via etree.fromstring",
        "events": "'<tag a=\"v\">' start, '</tag' end, '#text' text (adjacent merged)",
    }
    path = "tests/data/html/trees.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "cases": cases}, f, ensure_ascii=False, indent=0, sort_keys=True)
        f.write("\n")
    print("%d cases -> %s" % (len(cases), path))


if __name__ == "__main__":
    main()
